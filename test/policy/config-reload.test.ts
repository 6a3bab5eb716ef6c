import { mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileHash, type ReloadResult, type ReloadTrigger } from '../../src/app/config-reload.js';
import type { AuditEntry } from '../../src/state/audit/audit-log.js';
import { startHarness, type Harness } from '../helpers/core-harness.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Reloading hermes.config.yaml in a running core: `reloadConfig('signal')` is what main.ts's SIGHUP
 * handler calls (the signal itself is sent to a real bot process in test/e2e/sighup-reload.test.ts),
 * and the file watch reloads by itself. A valid file applies at once, an invalid one is rejected
 * whole with the reason in the log, sections that need a restart say so, and the audit keeps every
 * attempt.
 */

const V1 = `channels:
  default:
    instructions: Rule v1.
  slack:CENG:
    tools: {deny: [calculator]}
`;
const V2 = V1.replace('Rule v1.', 'Rule v2.').replace('deny: [calculator]', 'deny: [calculator, fetch_url]');
const ENG = { platform: 'slack', workspaceId: 'T1', channelId: 'CENG', isDm: false };

let dir: string;
let file: string;
let h: Harness;
const logs: Array<Record<string, unknown>> = [];
const reloads: Array<{ trigger: ReloadTrigger; result: ReloadResult }> = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-reload-'));
  file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, V1);
  await utimes(file, QUIET_MTIME, QUIET_MTIME);
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  h = await startHarness({
    env: { HERMES_CONFIG: file },
    core: { log: pino({ level: 'info' }, sink), configWatchMs: 25, onReload: (e) => reloads.push({ trigger: e.trigger, result: e.result }) },
  });
});
afterAll(async () => {
  await h?.close();
  await rm(dir, { recursive: true, force: true });
});

const policy = () => h.core.policies.at(ENG);
const configRows = async (): Promise<AuditEntry[]> => (await h.core.audit.list({ kind: 'config' }, { limit: 100, offset: 0 })).entries;
/** The modification time every quiet write leaves (whole seconds: set and read back exactly). */
const QUIET_MTIME = 1_700_000_000;
/**
 * Replaces the file keeping its modification time at QUIET_MTIME (written aside, then renamed over
 * it in one step), so the file watch sees no change and only an explicit reload (the signal's) reads it.
 */
async function writeQuietly(text: string): Promise<void> {
  const aside = `${file}.next`;
  await writeFile(aside, text);
  await utimes(aside, QUIET_MTIME, QUIET_MTIME);
  await rename(aside, file);
}

/** Tests run shuffled: each starts from V1 in force. */
async function reset(): Promise<void> {
  await writeQuietly(V1);
  expect(h.core.reloadConfig('signal')).toMatchObject({ ok: true });
  expect(policy().instructions).toEqual(['Rule v1.']);
}

describe('config reload', () => {
  it('the signal path: a valid file applies at once, is logged and audited with the new file hash', async () => {
    await reset();
    await writeQuietly(V2);
    const mark = logs.length;
    const result = h.core.reloadConfig('signal');
    expect(result).toEqual({ ok: true, hash: fileHash(file), changed: ['channels'], needsRestart: [] });
    expect(policy().instructions).toEqual(['Rule v2.']);
    expect(policy().tools.deny).toEqual(['calculator', 'fetch_url']);
    expect(logs.slice(mark).find((l) => l.msg === 'config reloaded' && l.trigger === 'signal')).toMatchObject({ changed: ['channels'], policies: ['default', 'slack:CENG'] });
    const ours = (r: AuditEntry) => r.outcome === 'reloaded' && r.detail.fileHash === fileHash(file);
    await waitFor('the audit row', async () => (await configRows()).some(ours));
    expect((await configRows()).find(ours)!.detail).toMatchObject({ trigger: 'signal', changed: ['channels'], configFile: file });
    // The start is recorded too, with the config hash.
    expect((await configRows()).some((r) => r.outcome === 'start' && typeof r.detail.configHash === 'string')).toBe(true);
  });

  it('the signal path: an invalid file is rejected whole, the log says why, the policies in force stay, the audit keeps the errors', async () => {
    await reset();
    const before = JSON.stringify(h.core.policies.current());
    // One good change and one bad field: nothing of it applies.
    await writeQuietly(`${V2}  slack:COPS:\n    respond: sometimes\n`);
    const mark = logs.length;
    const result = h.core.reloadConfig('signal');
    expect(result).toMatchObject({ ok: false, errors: [expect.stringContaining('channels.slack:COPS.respond')] });
    expect(JSON.stringify(h.core.policies.current())).toBe(before);
    expect(policy().instructions).toEqual(['Rule v1.']);
    const line = logs.slice(mark).find((l) => l.level === 50 && String(l.msg).startsWith('config reload rejected, the config in force stays'))!;
    expect(String(line.msg)).toContain('channels.slack:COPS.respond');
    expect(String(line.msg)).toContain('docs/access-and-limits.md');
    await waitFor('the audit row', async () => (await configRows()).some((r) => r.outcome === 'reload_rejected'));
    const row = (await configRows()).find((r) => r.outcome === 'reload_rejected')!;
    expect(row.detail).toMatchObject({ trigger: 'signal', errors: [expect.stringContaining('channels.slack:COPS.respond')] });

    // An empty file (an editor's write caught half-way) would open every channel: rejected too.
    await writeQuietly('');
    expect(h.core.reloadConfig('signal')).toMatchObject({ ok: false, errors: [expect.stringContaining('hermes.config.yaml is empty')] });
    expect(policy().instructions).toEqual(['Rule v1.']);

    // A file that is not YAML at all is rejected the same way.
    await writeQuietly('channels: [unclosed\n');
    expect(h.core.reloadConfig('signal')).toMatchObject({ ok: false, errors: [expect.stringContaining('could not be read')] });
    expect(policy().instructions).toEqual(['Rule v1.']);
  });

  it('a change of a section read only at start is not half-applied: the log says it needs a restart', async () => {
    await reset();
    await writeQuietly(`${V1}tools:\n  calculator: {timeoutMs: 5000}\n`);
    const mark = logs.length;
    const result = h.core.reloadConfig('signal');
    expect(result).toMatchObject({ ok: true, changed: ['tools'], needsRestart: ['tools'] });
    expect(logs.slice(mark).some((l) => l.level === 40 && String(l.msg).includes('tools changed, which takes effect only after a restart'))).toBe(true);
    expect(h.core.reloadConfig('signal')).toMatchObject({ ok: true, unchanged: true });
    await writeQuietly(V1);
    expect(h.core.reloadConfig('signal')).toMatchObject({ ok: true, changed: ['tools'] });
  });

  it('the file watch: a changed file reloads by itself (once it is written whole); an invalid one keeps what is in force', async () => {
    await reset();
    let seen = reloads.length;
    await writeFile(file, V1.replace('Rule v1.', 'Rule v4.'));
    await waitFor('the reload from the file watch', () => reloads.slice(seen).some((r) => r.trigger === 'file'), { timeoutMs: 10_000, everyMs: 10 });
    expect(policy().instructions).toEqual(['Rule v4.']);
    await waitFor('the audit row', async () => (await configRows()).some((r) => r.outcome === 'reloaded' && r.detail.trigger === 'file'));

    seen = reloads.length;
    const mark = logs.length;
    await writeFile(file, 'channels:\n  everywhere:\n    instructions: nope\n');
    await waitFor('the rejected reload from the file watch', () => reloads.slice(seen).some((r) => r.trigger === 'file' && !r.result.ok), { timeoutMs: 10_000, everyMs: 10 });
    expect(policy().instructions).toEqual(['Rule v4.']);
    expect(logs.slice(mark).some((l) => l.trigger === 'file' && String(l.msg).includes('channels.everywhere: is not a policy key'))).toBe(true);
    await waitFor('the audit row', async () => (await configRows()).some((r) => r.outcome === 'reload_rejected' && r.detail.trigger === 'file'));

    // Back to V1 with the quiet time (itself a change the watch reads), before other tests run.
    seen = reloads.length;
    await writeQuietly(V1);
    await waitFor('the reload of V1', () => reloads.slice(seen).some((r) => r.trigger === 'file' && r.result.ok), { timeoutMs: 10_000, everyMs: 10 });
    expect(policy().instructions).toEqual(['Rule v1.']);
  });
});
