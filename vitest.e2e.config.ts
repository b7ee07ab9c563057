import { defineConfig } from 'vitest/config';

/** The dashboard's browser tests (test/e2e/): run by `npm test` after the rest of the suite. */
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/setup/build-dist.ts', 'test/setup/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
