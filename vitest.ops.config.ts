import { defineConfig } from 'vitest/config';

/**
 * The whole system as several processes (test/ops/): each file starts its own PostgreSQL, Redis,
 * SMTP sink and server processes, so they run last and one at a time, on a machine no other test
 * keeps busy. No global setup: nothing here uses the shared test database.
 */
export default defineConfig({
  test: {
    include: ['test/ops/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
