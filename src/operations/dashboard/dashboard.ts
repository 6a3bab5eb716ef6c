import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpRoute } from '../../basics/http-server.js';
import type { Logger } from 'pino';
import { asset } from './assets.js';
import { createSessions, createSignInLimiter, tokenMatches, type Sessions, type SignInLimiter } from './auth.js';
import { REQUEST_TEXT as T } from './dashboard-text.js';
import { createEvalRuns } from './eval-runs.js';
import { html, withoutKnownSecrets, type Html } from './html.js';
import { BodyTooLarge, bearer, cookie, foreignOrigin, isHttps, readForm, redirect, sendHtml as sendPage, sendText } from './http-io.js';
import { evalsPage } from './pages/evals.js';
import { BASE, layout, notice, type PageChrome } from './pages/layout.js';
import { loginPage, SIGN_IN_TEXT } from './pages/login.js';
import { replayPage } from './pages/replay.js';
import { statsPage } from './pages/stats.js';
import { turnPage } from './pages/turn.js';
import { turnsPage } from './pages/turns.js';
import { createReplayRunner, type ReplayDeps, type ReplayRunner } from './replay-runner.js';
import { createTraceIndex, type TraceIndex } from './trace-index.js';
import { computeStats, pageOf, parseFilter } from './turn-query.js';
import { MAX_PAGE, type AuditLog } from '../../state/audit/audit-log.js';
import { AUDIT_PAGE_SIZE, parseAuditQuery } from './audit-query.js';
import { AUDIT_CSV_COLUMNS, auditCsvRow, csvRow } from './audit-csv.js';
import { auditPage } from './pages/audit.js';
import { redactSecrets } from '../../basics/safety/secrets.js';
import type { FeedbackReader, FeedbackSummary, FeedbackVote } from '../../state/feedback/feedback-store.js';
import type { RequestHandler } from './dashboard-route.js';

export { dashboardRoute, type RequestHandler } from './dashboard-route.js';

/**
 * The dashboard as one platform-free request handler for everything under /dashboard, which the
 * bot registers on its one HTTP server on PORT (`dashboardRoute`, src/app/bot-http.ts), next to
 * Slack's events and /healthz. docs/dashboard.md describes the pages and the security choices.
 */

export interface DashboardOptions {
  token: string;
  tracesDir: string;
  evalsDir: string;
  log: Logger;
  /** The bot's configured secrets (secretValues): never shown on a page, like in traces. The token is always one. */
  secrets?: readonly string[];
  now?: () => number;
  /** Absent: the turn page shows no replay button. */
  replay?: ReplayDeps;
  sessionTtlMs?: number;
  /** Votes on answers (the bot's database); absent: the pages show none. */
  feedback?: FeedbackReader;
  /** Failed sign-ins per address before it is refused, and for how long (default 5 in 15 min). */
  signIn?: { maxFailures?: number; windowMs?: number };
  /** The audit record (/dashboard/audit); absent: the page says it is not available. */
  audit?: Pick<AuditLog, 'list'>;
}

/** The most rows one CSV download holds (newest first); narrow the dates for older ones. */
export const MAX_AUDIT_CSV_ROWS = 100_000;


export interface Dashboard {
  handle: RequestHandler;
  index: TraceIndex;
  /**
   * Reads every trace file into the index now, so the first page someone opens is as quick as
   * the next (the bot calls it once it is ready). Never rejects: a failure is logged and the
   * first request tries again.
   */
  warm(): Promise<void>;
}

const COOKIE = 'hermes_dashboard';

type Access = { kind: 'session'; id: string } | { kind: 'bearer' } | { kind: 'none' };

/** Only a path inside the dashboard may be the target after sign-in (never another site). */
function safeNext(next: string | null | undefined): string | undefined {
  return next && /^\/dashboard\/[\w\-./%?=&+]*$/.test(next) && !next.includes('//') && !next.startsWith(`${BASE}/login`) ? next : undefined;
}

export function createDashboard(opts: DashboardOptions): Dashboard {
  /** A page still shows when the votes cannot be read; it says so instead of showing none. */
  async function readVotes<T extends FeedbackVote[] | FeedbackSummary>(read: () => Promise<T> | undefined): Promise<T | 'unavailable' | undefined> {
    try {
      return await read();
    } catch (err) {
      opts.log.warn({ err: (err as Error).message }, 'dashboard: could not read the votes');
      return 'unavailable';
    }
  }

  const now = opts.now ?? Date.now;
  const ttlMs = opts.sessionTtlMs ?? 12 * 3600_000;
  const sessions: Sessions = createSessions({ now, ttlMs });
  const limiter: SignInLimiter = createSignInLimiter({ now, ...opts.signIn });
  const index = createTraceIndex(opts.tracesDir);
  const evals = createEvalRuns(opts.evalsDir);
  const replays: ReplayRunner | undefined = opts.replay && createReplayRunner(opts.replay, now);

  const known = [opts.token, ...(opts.secrets ?? [])];
  // Every page leaves through here, with the configured secrets replaced.
  const sendHtml = (res: ServerResponse, status: number, page: Html, headers?: Record<string, string>) => sendPage(res, status, withoutKnownSecrets(page, known), headers);

  const address = (req: IncomingMessage) => req.socket.remoteAddress ?? 'unknown';
  const chrome = (a: Access): PageChrome => ({ signedIn: true, ...(a.kind === 'session' && { formToken: sessions.formToken(a.id) }) });
  const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

  function sessionCookie(req: IncomingMessage, value: string, maxAgeS: number): string {
    return `${COOKIE}=${value}; Path=${BASE}; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${isHttps(req) ? '; Secure' : ''}`;
  }

  /** Who is asking; a wrong bearer token is answered here (401 or 429) and yields undefined. */
  function access(req: IncomingMessage, res: ServerResponse): Access | undefined {
    const given = bearer(req);
    if (given !== undefined) {
      const wait = limiter.blockedFor(address(req));
      if (wait > 0) {
        sendText(res, 429, `${SIGN_IN_TEXT.tooMany(minutes(wait))}\n`, { 'retry-after': String(Math.ceil(wait / 1000)) });
        return undefined;
      }
      if (!tokenMatches(given, opts.token)) {
        limiter.failed(address(req));
        const after = limiter.blockedFor(address(req));
        opts.log.warn({ address: address(req) }, 'dashboard: wrong bearer token');
        if (after > 0) sendText(res, 429, `${SIGN_IN_TEXT.tooMany(minutes(after))}\n`, { 'retry-after': String(Math.ceil(after / 1000)) });
        else sendText(res, 401, `${SIGN_IN_TEXT.wrongToken}\n`, { 'www-authenticate': 'Bearer realm="hermes dashboard"' });
        return undefined;
      }
      return { kind: 'bearer' };
    }
    const id = cookie(req, COOKIE);
    return id && sessions.valid(id) ? { kind: 'session', id } : { kind: 'none' };
  }

  async function signIn(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (foreignOrigin(req)) return sendText(res, 403, `${T.foreignSignIn}\n`);
    const form = await readForm(req);
    const next = safeNext(form.get('next'));
    const wait = limiter.blockedFor(address(req));
    if (wait > 0) return sendHtml(res, 429, loginPage({ message: SIGN_IN_TEXT.tooMany(minutes(wait)), error: true, next }), { 'retry-after': String(Math.ceil(wait / 1000)) });
    if (!tokenMatches(form.get('token') ?? '', opts.token)) {
      limiter.failed(address(req));
      const after = limiter.blockedFor(address(req));
      opts.log.warn({ address: address(req) }, 'dashboard: failed sign-in');
      return sendHtml(res, after > 0 ? 429 : 401, loginPage({ message: after > 0 ? SIGN_IN_TEXT.tooMany(minutes(after)) : SIGN_IN_TEXT.wrongToken, error: true, next }));
    }
    limiter.succeeded(address(req));
    const id = sessions.create();
    redirect(res, next ?? `${BASE}/turns`, { 'set-cookie': sessionCookie(req, id, Math.floor(ttlMs / 1000)) });
  }

  /** POST forms of a signed-in page: same site and, for a browser session, the session's form token. */
  function formAllowed(req: IncomingMessage, a: Access, form: URLSearchParams): boolean {
    if (foreignOrigin(req)) return false;
    return a.kind === 'bearer' || (a.kind === 'session' && sessions.formTokenValid(a.id, form.get('form_token') ?? undefined));
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const p = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';

    if (p.startsWith(`${BASE}/assets/`) && method === 'GET') {
      const a = await asset(p.slice(`${BASE}/assets/`.length));
      if (!a) return sendText(res, 404, `${T.notFound}\n`);
      res.writeHead(200, { 'content-type': a.type, 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' });
      res.end(a.body);
      return;
    }
    if (p === `${BASE}/login`) {
      if (method === 'POST') return signIn(req, res);
      const next = safeNext(url.searchParams.get('next'));
      const a = cookie(req, COOKIE);
      if (a && sessions.valid(a)) return redirect(res, next ?? `${BASE}/turns`);
      return sendHtml(res, 200, loginPage({ next, message: url.searchParams.has('signed-out') ? SIGN_IN_TEXT.signedOut : undefined }));
    }

    const a = access(req, res);
    if (!a) return;
    if (a.kind === 'none') {
      if (method !== 'GET') return sendText(res, 401, `${SIGN_IN_TEXT.expired}\n`);
      const next = safeNext(`${url.pathname}${url.search}`);
      return redirect(res, `${BASE}/login${next ? `?next=${encodeURIComponent(next)}` : ''}`);
    }

    if (method === 'POST') {
      const form = await readForm(req);
      if (!formAllowed(req, a, form)) return sendText(res, 403, `${T.foreignForm}\n`);
      if (p === `${BASE}/logout`) {
        if (a.kind === 'session') sessions.drop(a.id);
        return redirect(res, `${BASE}/login?signed-out`, { 'set-cookie': sessionCookie(req, '', 0) });
      }
      const replay = /^\/dashboard\/turns\/([^/]+)\/replay$/.exec(p);
      if (replay) return runReplay(req, res, a, decodeURIComponent(replay[1]!), form.get('model')?.trim() ?? '');
      return sendText(res, 404, `${T.notFound}\n`);
    }
    if (method !== 'GET' && method !== 'HEAD') return sendText(res, 405, `${T.methodNotAllowed}\n`, { allow: 'GET, POST' });

    if (p === BASE) return redirect(res, `${BASE}/turns`);
    if (p === `${BASE}/turns`) {
      await index.refresh();
      const filter = parseFilter(url.searchParams);
      const all = index.turns();
      return sendHtml(res, 200, turnsPage(all, pageOf(all, filter, Number(url.searchParams.get('page') ?? 1)), filter, chrome(a)));
    }
    const turn = /^\/dashboard\/turns\/([^/]+)$/.exec(p);
    if (turn) {
      await index.refresh();
      const id = decodeURIComponent(turn[1]!);
      const t = index.turn(id);
      if (!t) return sendHtml(res, 404, layout(T.noSuchTurn, html`<h1>${T.noSuchTurn}</h1><p>${T.noTurn(id)}</p><p><a href="${BASE}/turns">${T.allTurns}</a></p>`, chrome(a)));
      const events = await index.readEvents(id);
      const votes = await readVotes(() => opts.feedback?.votesFor(id));
      const replayForm = replays && opts.replay
        ? { defaultModel: opts.replay.defaultModel, formToken: a.kind === 'session' ? sessions.formToken(a.id) : undefined, unavailable: t.modelCalls === 0 ? 'this turn has no recorded model calls.' : undefined }
        : undefined;
      return sendHtml(res, 200, turnPage(t, events, chrome(a), replayForm, votes));
    }
    const replayResult = /^\/dashboard\/replays\/([\w-]+)$/.exec(p);
    if (replayResult) {
      const run = replays?.get(replayResult[1]!);
      if (!run) return sendHtml(res, 404, layout(T.noSuchReplay, html`<h1>${T.noSuchReplay}</h1><p>${T.replaysKept}</p>`, chrome(a)));
      return sendHtml(res, 200, replayPage(run, chrome(a)));
    }
    if (p === `${BASE}/stats`) {
      await index.refresh();
      const days = [1, 7, 30, 90, 365].includes(Number(url.searchParams.get('days'))) ? Number(url.searchParams.get('days')) : 30;
      const until = now();
      const since = Date.parse(`${new Date(until - (days - 1) * 86_400_000).toISOString().slice(0, 10)}T00:00:00Z`);
      const feedback = await readVotes(() => opts.feedback?.summary({ since, until }));
      return sendHtml(res, 200, statsPage(computeStats(index.turns(), index.refusals(), since, until), days, chrome(a), feedback));
    }
    if (p === `${BASE}/audit` || p === `${BASE}/audit.csv`) {
      if (!opts.audit) return sendHtml(res, 404, layout('Audit', html`<h1>Audit</h1>${notice(T.noAudit, 'error')}`, chrome(a)));
      const q = parseAuditQuery(url.searchParams);
      if (p.endsWith('.csv')) return sendAuditCsv(res, opts.audit, q.filter);
      const result = await opts.audit.list(q.filter, { limit: AUDIT_PAGE_SIZE, offset: (q.page - 1) * AUDIT_PAGE_SIZE });
      return sendHtml(res, 200, auditPage(result, q, chrome(a)));
    }
    if (p === `${BASE}/evals`) {
      const pick = { a: url.searchParams.get('a') ?? undefined, b: url.searchParams.get('b') ?? undefined };
      return sendHtml(res, 200, evalsPage(await evals.list(), opts.evalsDir, pick, chrome(a)));
    }
    return sendHtml(res, 404, layout(T.notFound, html`<h1>${T.notFound}</h1><p><a href="${BASE}/turns">${T.allTurns}</a></p>`, chrome(a)));
  }

  /**
   * Every row the filter matches, newest first, written as it is read (1,000 rows a query). The
   * range ends now, so rows recorded during the download cannot shift the pages already read.
   */
  async function sendAuditCsv(res: ServerResponse, audit: Pick<AuditLog, 'list'>, filter: Parameters<AuditLog['list']>[0]): Promise<void> {
    const to = Math.min(filter.to ?? Infinity, now() + 1);
    const day = new Date(now()).toISOString().slice(0, 10);
    const clean = (text: string) => redactSecrets(text, known);
    const first = await audit.list({ ...filter, to }, { limit: MAX_PAGE, offset: 0 });
    res.writeHead(200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="hermes-audit-${day}.csv"`,
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
      ...(first.total > MAX_AUDIT_CSV_ROWS && { 'x-hermes-rows-omitted': String(first.total - MAX_AUDIT_CSV_ROWS) }),
    });
    res.write(csvRow(AUDIT_CSV_COLUMNS));
    let entries = first.entries;
    for (let offset = 0; entries.length > 0 && offset < MAX_AUDIT_CSV_ROWS; ) {
      // A slow reader holds the next query back instead of the rows piling up in memory.
      if (!res.write(entries.slice(0, MAX_AUDIT_CSV_ROWS - offset).map((e) => auditCsvRow(e, clean)).join(''))) await once(res, 'drain');
      if (res.destroyed) return;
      offset += entries.length;
      if (entries.length < MAX_PAGE || offset >= MAX_AUDIT_CSV_ROWS) break;
      entries = (await audit.list({ ...filter, to }, { limit: MAX_PAGE, offset })).entries;
    }
    res.end();
  }

  async function runReplay(req: IncomingMessage, res: ServerResponse, a: Access, turnId: string, model: string): Promise<void> {
    if (!replays) return sendText(res, 404, `${T.noReplay}\n`);
    await index.refresh();
    if (!index.turn(turnId)) return sendText(res, 404, `${T.noTurn(turnId)}\n`);
    const result = await replays.run(turnId, await index.readEvents(turnId), model);
    if ('refused' in result) {
      return sendHtml(res, replays.busy() ? 429 : 400, layout('Replay', html`<h1>Replay</h1>${notice(result.refused, 'error')}<p><a href="${BASE}/turns/${encodeURIComponent(turnId)}">${T.backToTurn}</a></p>`, chrome(a)));
    }
    opts.log.info({ turnId, model, steps: result.steps.length, error: result.error }, 'dashboard: replay finished');
    redirect(res, `${BASE}/replays/${result.id}`);
  }

  return {
    index,
    async warm() {
      const started = performance.now();
      try {
        await index.refresh();
        opts.log.info({ turns: index.turns().length, ms: Math.round(performance.now() - started) }, 'dashboard: traces indexed');
      } catch (err) {
        opts.log.warn({ err: (err as Error).message }, 'dashboard: could not read the traces yet; the first page will try again');
      }
    },
    handle(req, res) {
      route(req, res).catch((err: Error) => {
        if (err instanceof BodyTooLarge) {
          if (!res.headersSent) sendText(res, 413, `${T.formTooLarge}\n`, { connection: 'close' });
          return;
        }
        opts.log.error({ err: err.message, path: (req.url ?? '').split('?')[0] }, 'dashboard: request failed');
        if (!res.headersSent) sendText(res, 500, `${T.failed}\n`);
        else res.destroy();
      });
    },
  };
}
