import pino from 'pino';
import { createBotHttp } from '../src/app/bot-http.js';
import { createDashboard } from '../src/operations/dashboard/dashboard.js';
import { forceGc } from './stats.js';

/**
 * The dashboard of bench section 7, alone in a fresh process (started with --expose-gc) so its
 * heap is not blurred by the bench harness's: the real dashboard on the bot's HTTP server over
 * the traces directory, its index not built yet. The parent times the requests; on 'heap' this
 * process runs a full GC and answers the JS heap in use, so the parent can take the difference
 * between before the first open and after the index was built.
 * argv: traces dir, evals dir, token.
 */
export type DashboardProcessMessage =
  | { type: 'ready'; port: number }
  /** cpu*Us: this process's CPU time so far (user + system), read just before and just after the GC. */
  | { type: 'heap'; heapBytes: number; externalBytes: number; rssBytes: number; cpuBeforeGcUs: number; cpuAfterGcUs: number }
  | { type: 'error'; message: string };
export type DashboardProcessRequest = { type: 'heap' } | { type: 'stop' };

async function main(): Promise<void> {
  const [tracesDir = '', evalsDir = '', token = ''] = process.argv.slice(2);
  const quiet = pino({ level: 'silent' });
  const server = createBotHttp({ log: quiet, isReady: () => true, dashboard: createDashboard({ token, tracesDir, evalsDir, log: quiet }) });
  const port = await server.start(0, '127.0.0.1');
  process.on('message', (m: DashboardProcessRequest) => {
    if (m.type === 'heap') {
      const cpu = () => {
        const c = process.cpuUsage();
        return c.user + c.system;
      };
      const cpuBeforeGcUs = cpu();
      forceGc();
      forceGc();
      const cpuAfterGcUs = cpu();
      const u = process.memoryUsage();
      process.send?.({ type: 'heap', heapBytes: u.heapUsed, externalBytes: u.external, rssBytes: u.rss, cpuBeforeGcUs, cpuAfterGcUs } satisfies DashboardProcessMessage);
    } else if (m.type === 'stop') {
      void server.stop().finally(() => process.exit(0));
    }
  });
  process.send?.({ type: 'ready', port } satisfies DashboardProcessMessage);
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.message } satisfies DashboardProcessMessage);
  process.exit(1);
});
