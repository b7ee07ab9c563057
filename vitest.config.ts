import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The browser tests run after the rest (vitest.e2e.config.ts): each starts a server and a
    // Chromium, and beside them the timing-sensitive tests (workers killed mid-SMTP, slow clients)
    // would run on a machine busier than they were written for. test/ops/ runs last, alone
    // (vitest.ops.config.ts).
    exclude: ['test/e2e/**', 'test/ops/**', '**/node_modules/**'],
    globalSetup: ['test/setup/build-dist.ts', 'test/setup/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // The files of one fork share its module cache: the app's ~450 modules are loaded once per
    // fork instead of once per file (import time 204 s → 12 s summed, the suite ~35 % faster).
    // So no file may leave module state changed behind it: spies restored (and restoreMocks
    // below), apps, pools and servers closed in afterAll (test/README.md "Shared forks").
    isolate: false,
    restoreMocks: true,
  },
});
