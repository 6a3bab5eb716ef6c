import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, parseUserKey, parseWhen } from '../../src/operations/stats/stats-cli.js';
import type { TraceStats } from '../../src/operations/stats/trace-stats.js';
import { NOW, writeTraceFixtures } from './trace-fixtures.js';

let dir: string;
beforeAll(async () => {
  dir = await writeTraceFixtures();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function run(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env, cwd: process.cwd(), now: () => NOW });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('npm run stats', () => {
  it('prints per-tool success and latency, steps and tokens per turn and errors by kind for the last 24 h', async () => {
    const r = await run(['--traces', dir]);
    expect(r.code).toBe(0);
    expect(r.out).toContain('2026-03-13T12:00:00.000Z to 2026-03-14T12:00:00.000Z, all users');
    expect(r.out).toContain('Turns: 3 (answered 2, model_error:timeout 1)');
    expect(r.out).toContain('Steps per turn: mean 2.0, max 3');
    expect(r.out).toContain('Tokens: 1500 in, 120 out (500 in per turn)');
    expect(r.out).toContain('  fetch_url: 2 calls, 50% ok, p50 150 ms, p95 150 ms');
    expect(r.out).toContain('  calculator: 1 calls, 100% ok, p50 5 ms, p95 5 ms');
    expect(r.out).toContain('Errors: model_error:timeout 1, tool:refused 1');
    expect(r.out).toContain('Refused: not_allowed 2, rate_limit 1');
  });

  it('widens the window with --since 7d and narrows it to one user with --user', async () => {
    const week = JSON.parse((await run(['--traces', dir, '--since', '7d', '--json'])).out) as { stats: TraceStats };
    expect(week.stats.turns).toBe(4);
    expect(week.stats.tokens.prompt).toBe(2500);
    const u1 = JSON.parse((await run(['--traces', dir, '--since', '2026-03-14', '--user', 'slack:T1:U1', '--json'])).out) as { window: { user: string }; stats: TraceStats };
    expect(u1.window.user).toBe('slack:T1:U1');
    expect(u1.stats.turns).toBe(2);
    expect(u1.stats.outcomes).toEqual({ answered: 2 });
    expect(Object.keys(u1.stats.tools).sort()).toEqual(['calculator', 'fetch_url']);
    expect(u1.stats.refusals).toEqual({ rate_limit: 1 });
    const u2 = JSON.parse((await run(['--traces', dir, '--user', 'discord:G1:U2', '--json'])).out) as { stats: TraceStats };
    expect(u2.stats).toMatchObject({ turns: 1, errors: { 'model_error:timeout': 1 }, modelCalls: { count: 1, errors: 1 } });
  });

  it('honours --until and reads HERMES_DATA_DIR when no --traces is given', async () => {
    const r = await run(['--since', '2026-03-14T00:00:00Z', '--until', '2026-03-14T09:30:00Z', '--json'], { HERMES_DATA_DIR: `${dir}/..` });
    expect(r.code).toBe(0);
    // $HERMES_DATA_DIR/traces does not exist there: an empty window, not a crash.
    expect((JSON.parse(r.out) as { stats: TraceStats }).stats.turns).toBe(0);
    const only = JSON.parse((await run(['--traces', dir, '--since', '2026-03-14T00:00:00Z', '--until', '2026-03-14T09:30:00Z', '--json'])).out) as { stats: TraceStats };
    expect(only.stats.turns).toBe(1);
    expect((await run(['--traces', dir, '--since', '1m'])).out).toContain('No turns in this window.');
  });

  it('fails with the reason when the traces cannot be read, instead of printing zeros', async () => {
    const r = await run(['--traces', path.join(dir, '2026-03-14.jsonl')]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^traces in .*2026-03-14\.jsonl could not be read \(ENOTDIR\): .*check the folder's permissions/);
  });

  it('rejects bad windows and user keys with one clear line', async () => {
    expect(await run(['--since', 'yesterday'])).toMatchObject({ code: 2, err: expect.stringContaining('--since "yesterday" is not a time') });
    expect(await run(['--until', '5x'])).toMatchObject({ code: 2, err: expect.stringContaining('--until "5x" is not a time') });
    expect(await run(['--since', '1h', '--until', '2h'])).toMatchObject({ code: 2, err: expect.stringContaining('--since is after --until') });
    expect(await run(['--user', 'U1'])).toMatchObject({ code: 2, err: expect.stringContaining('is not a user key') });
    expect(await run(['--nope'])).toMatchObject({ code: 2 });
  });
});

describe('window and user parsing', () => {
  it('reads relative and absolute times', () => {
    expect(parseWhen('24h', NOW)).toBe(NOW - 86_400_000);
    expect(parseWhen('30m', NOW)).toBe(NOW - 1_800_000);
    expect(parseWhen('2w', NOW)).toBe(NOW - 14 * 86_400_000);
    expect(parseWhen('2026-03-01', NOW)).toBe(Date.parse('2026-03-01T00:00:00Z'));
    expect(parseWhen('2026-03-01T10:00', NOW)).toBe(Date.parse('2026-03-01T10:00:00Z'));
    expect(parseWhen('2026-03-01T10:00:00+02:00', NOW)).toBe(Date.parse('2026-03-01T08:00:00Z'));
    expect(parseWhen('2026-13-45', NOW)).toBeUndefined();
    expect(parseWhen('7 days', NOW)).toBeUndefined();
  });
  it('encodes user keys exactly like the traces do', () => {
    expect(parseUserKey('slack:T1:U1')).toBe('slack:T1:U1');
    expect(parseUserKey('discord:dm:1%3A2')).toBe('discord:dm:1%3A2');
    expect(parseUserKey('irc:x:y')).toBeUndefined();
    expect(parseUserKey('slack::U1')).toBeUndefined();
  });
});
