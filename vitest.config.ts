import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Starts a throw-away PostgreSQL when HERMES_TEST_PG_URL is unset and the server is installed.
    globalSetup: ['test/global-postgres.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start real servers on 127.0.0.1 and real SQLite files; two workers fit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
    // Every test must pass alone and in any order: files and tests run shuffled (the seed is
    // printed; rerun one order with --sequence.seed=N).
    sequence: { shuffle: true },
  },
});
