import pino from 'pino';
import { createDashboard, type Dashboard, type DashboardOptions } from '../../src/operations/dashboard/dashboard.js';
import { createBotHttp } from '../../src/app/bot-http.js';

export const TOKEN = 'dashboard-test-token-0123456789';

export interface Served {
  base: string;
  dashboard: Dashboard;
  /** GET/POST without following redirects. */
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
  /** Signs in through the form; returns the Cookie header value. */
  signIn(): Promise<string>;
  close(): Promise<void>;
}

/** The real dashboard handler on the bot's real HTTP server (src/app/bot-http.ts) on 127.0.0.1 (a free port). */
export async function serveDashboard(opts: Partial<DashboardOptions> & Pick<DashboardOptions, 'tracesDir' | 'evalsDir'>): Promise<Served> {
  const log = pino({ level: process.env.TEST_LOG ?? 'silent' });
  const dashboard = createDashboard({ token: TOKEN, log, ...opts });
  const server = createBotHttp({ log, isReady: () => true, dashboard });
  const port = await server.start(0, '127.0.0.1');
  const base = `http://127.0.0.1:${port}`;
  const get = (p: string, headers: Record<string, string> = {}) => fetch(`${base}${p}`, { redirect: 'manual', headers, signal: AbortSignal.timeout(10_000) });
  const post = (p: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${base}${p}`, { method: 'POST', redirect: 'manual', body: new URLSearchParams(form), headers, signal: AbortSignal.timeout(30_000) });
  return {
    base,
    dashboard,
    get,
    post,
    async signIn() {
      const res = await post('/dashboard/login', { token: TOKEN });
      if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
      return (res.headers.get('set-cookie') ?? '').split(';')[0]!;
    },
    close: () => server.stop(),
  };
}

/** The form token embedded in a signed-in page. */
export function formToken(page: string): string {
  const m = /name="form_token" value="([^"]+)"/.exec(page);
  if (!m) throw new Error('no form token on the page');
  return m[1]!;
}
