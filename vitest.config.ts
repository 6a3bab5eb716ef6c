import { defineConfig } from 'vitest/config';

// Two projects, told apart by file name, so the fast loop needs no list to keep up to date:
// - unit: everything runs inside the test process. In-process fakes on 127.0.0.1 (the fake model,
//   fake Slack and Discord) are fine; no child process (compiled bot, tsx, bwrap sandbox, Chromium,
//   git), no PostgreSQL, no bench.  `npm run test:unit` (projects unit and unit-own-process)
// - e2e: a file named `*.e2e.test.ts`, or under test/e2e/: whatever needs more than the process.
//   `npm run test:e2e`
// `npm test` runs both (CI calls it).
const E2E = ['test/**/*.e2e.test.ts', 'test/e2e/**/*.test.ts'];
// Store tests written once for both engines: the unit project runs their SQLite cases, the e2e
// project their PostgreSQL cases (HERMES_TEST_ENGINES, read by test/helpers/postgres.ts).
const BOTH_ENGINES = ['test/store/tables.test.ts', 'test/access/usage-tables.test.ts', 'test/timers/timer-tables.test.ts', 'test/sessions/session-store.test.ts', 'test/approvals/approval-store.test.ts', 'test/audit/audit-log.test.ts'];
// Unit files that look at the process itself (Node's module cache) and so need one of their own.
const OWN_PROCESS = ['test/telemetry/off-by-default.test.ts', 'test/slack/defer-socket-mode.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start real servers on 127.0.0.1 and real SQLite files; two workers fit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
    // Every test must pass alone and in any order: files and tests run shuffled (the seed is
    // printed; rerun one order with --sequence.seed=N).
    sequence: { shuffle: true },
    projects: [
      // The unit files share their two worker processes (isolate: false): a fresh process per file
      // re-imported Bolt, discord.js, openai, kysely and the tokenizer's rank tables every time,
      // about half of the loop's time. Every unit file must therefore leave the process as it found
      // it: no process.env or global changes, no module mocks, servers and timers closed, fake
      // timers restored. Files that inspect the process itself run in their own (OWN_PROCESS).
      { extends: true, test: { name: 'unit', include: ['test/**/*.test.ts'], exclude: [...E2E, ...OWN_PROCESS], isolate: false, env: { HERMES_TEST_ENGINES: 'sqlite' } } },
      { extends: true, test: { name: 'unit-own-process', include: OWN_PROCESS, env: { HERMES_TEST_ENGINES: 'sqlite' } } },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: [...E2E, ...BOTH_ENGINES],
          env: { HERMES_TEST_ENGINES: 'postgres' },
          // Starts a throw-away PostgreSQL when HERMES_TEST_PG_URL is unset and the server is installed.
          globalSetup: ['test/global-postgres.ts'],
        },
      },
    ],
  },
});
