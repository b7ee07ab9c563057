import { defineConfig } from 'vitest/config';

/**
 * The whole system as several processes (test/ops/): each file starts its own PostgreSQL, Redis,
 * SMTP sink and server processes, so they run last and one at a time, on a machine no other test
 * keeps busy. No shared test database: the only global setup builds dist/ (what they spawn).
 */
export default defineConfig({
  test: {
    include: ['test/ops/**/*.test.ts'],
    globalSetup: ['test/setup/build-dist.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
