import path from 'node:path';
import { parseCli, runIfEntryPoint, type CliIo } from '../../basics/cli/parse-cli.js';
import { speakerKey, type Platform } from '../../basics/types.js';
import { formatStats, readTraceStats, TracesUnreadableError } from './trace-stats.js';
import { openFeedbackForReading } from '../../state/feedback/open-feedback.js';
import type { FeedbackSummary } from '../../state/feedback/feedback-store.js';

/**
 * `npm run stats`: usage and quality numbers from the trace files, for a time window, and the
 * votes on answers from the bot's database (HERMES_STORE_URL, else HERMES_DATA_DIR/hermes.sqlite).
 */

const USAGE = `Usage: npm run stats [-- options]

Options:
  --since WHEN   start of the window: 30m, 24h, 7d, 2w ago, or an ISO date/time (default 24h)
  --until WHEN   end of the window, same forms (default now)
  --user KEY     only turns started by platform:workspace:user, e.g. slack:T0123:U0456
  --traces DIR   trace folder (default $HERMES_DATA_DIR/traces, else ./data/traces)
  --json         print the numbers as JSON
  --help`;

/** The stats tool's io is the shared one (with `now`, for relative windows). */
export type StatsIo = CliIo;

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** `24h` → now minus 24 hours; an ISO date or date-time → that instant; anything else → undefined. */
export function parseWhen(text: string, now: number): number | undefined {
  const rel = /^(\d{1,6})\s*([mhdw])$/i.exec(text.trim());
  if (rel) return now - Number(rel[1]) * UNIT_MS[rel[2]!.toLowerCase()]!;
  if (!/^\d{4}-\d{2}-\d{2}/.test(text.trim())) return undefined;
  // A date-time without an offset means UTC, like the trace timestamps (not the machine's zone).
  const t = text.trim();
  const at = Date.parse(/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(t) ? `${t}Z` : t);
  return Number.isNaN(at) ? undefined : at;
}

/** `slack:T1:U1` → the speakerKey the traces use (each part URI-encoded, as speakerKey does). */
export function parseUserKey(text: string): string | undefined {
  const parts = text.split(':');
  if (parts.length !== 3 || parts.some((p) => p === '')) return undefined;
  const [platform, workspaceId, userId] = parts.map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  }) as [string, string, string];
  if (!['slack', 'discord', 'shell'].includes(platform)) return undefined;
  return speakerKey({ platform: platform as Platform, workspaceId, userId });
}

export async function main(argv: string[], io: StatsIo): Promise<number> {
  const parsed = parseCli(argv, {
    since: { type: 'string' },
    until: { type: 'string' },
    user: { type: 'string' },
    traces: { type: 'string' },
    json: { type: 'boolean' },
    help: { type: 'boolean' },
  }, USAGE, io);
  if (parsed.exit !== undefined) return parsed.exit;
  const args = parsed.args;
  const o = args.values;
  const now = io.now?.() ?? Date.now();
  const since = parseWhen(o.since ?? '24h', now);
  const until = o.until === undefined ? now : parseWhen(o.until, now);
  if (since === undefined || until === undefined) {
    io.err(`--${since === undefined ? 'since' : 'until'} ${JSON.stringify(since === undefined ? o.since : o.until)} is not a time: use 30m, 24h, 7d, 2w or an ISO date like 2026-03-14 or 2026-03-14T09:00:00Z`);
    return 2;
  }
  if (since > until) {
    io.err('--since is after --until: the window is empty; swap them');
    return 2;
  }
  let userKey: string | undefined;
  if (o.user !== undefined) {
    userKey = parseUserKey(o.user);
    if (!userKey) {
      io.err(`--user ${JSON.stringify(o.user)} is not a user key: use platform:workspace:user, e.g. slack:T0123:U0456 or discord:987654321:123456789 (platform slack, discord or shell)`);
      return 2;
    }
  }
  const dataDir = path.resolve(io.cwd, io.env.HERMES_DATA_DIR?.trim() || './data');
  const dir = path.resolve(io.cwd, o.traces ?? path.join(dataDir, 'traces'));
  const stats = await readTraceStats(dir, { since, until, userKey }).catch((err: unknown) => {
    if (err instanceof TracesUnreadableError) return err;
    throw err;
  });
  if (stats instanceof TracesUnreadableError) {
    io.err(`${stats.message}: check the folder's permissions, or point --traces at another folder`);
    return 1;
  }
  const window = { since: new Date(since).toISOString(), until: new Date(until).toISOString(), ...(userKey ? { user: userKey } : {}) };
  // Votes are per answer, not per requester: --user does not narrow them.
  const feedback = await readFeedback(io, { since, until });
  if (o.json) {
    io.out(JSON.stringify({ traces: dir, window, stats, feedback }, null, 2));
    return 0;
  }
  io.out(`Traces in ${dir}, ${window.since} to ${window.until}${userKey ? `, user ${userKey}` : ', all users'}`);
  for (const line of formatStats(stats)) io.out(line);
  io.out(feedbackLine(feedback));
  return 0;
}

type FeedbackRead = (FeedbackSummary & { source: string }) | { unavailable: string };

async function readFeedback(io: StatsIo, window: { since: number; until: number }): Promise<FeedbackRead> {
  try {
    const opened = await openFeedbackForReading(io.env, io.cwd);
    if (!opened) return { unavailable: 'no database with votes yet' };
    try {
      return { ...(await opened.reader.summary(window)), source: opened.where };
    } finally {
      await opened.close();
    }
  } catch (err) {
    return { unavailable: `the votes could not be read (${(err as Error).message})` };
  }
}

function feedbackLine(f: FeedbackRead): string {
  if ('unavailable' in f) return `Feedback: ${f.unavailable}`;
  const total = f.up + f.down;
  return `Feedback: ${f.up} up, ${f.down} down${total ? ` (${Math.round((f.up / total) * 100)}% up)` : ''} on ${f.turns} answer${f.turns === 1 ? '' : 's'}`;
}

runIfEntryPoint(import.meta.url, main, 'Stats');
