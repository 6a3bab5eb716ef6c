import { mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/state/audit/audit-log.js';
import { openSqliteDatabase } from '../../src/state/store/database.js';
import { startFakeOpenAI, type ChatCompletionRequestBody, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startChat, type ChatProcess } from '../helpers/chat-process.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * SIGHUP sent to a real bot process (`npm run chat`, piped): hermes.config.yaml is read again
 * without a restart. A valid file changes what the next model call gets; an invalid one is
 * rejected with a log line naming the problem and the old policy stays; the audit (read from the
 * process's SQLite file after it exited) has the start, the reload and the rejection. The file is
 * always replaced with the same modification time, so the file watch stays out of it: only the
 * signal can have caused the reload.
 */

const QUIET_MTIME = 1_700_000_000;
const V1 = 'channels:\n  default:\n    instructions: Rule v1.\n';
const V2 = 'channels:\n  default:\n    instructions: Rule v2.\n';

let dir: string | undefined;
let chat: ChatProcess | undefined;
let ai: FakeOpenAI | undefined;
afterAll(async () => {
  await chat?.kill9();
  await ai?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const systemText = (req: ChatCompletionRequestBody) => String(req.messages.find((m) => m.role === 'system')?.content ?? '');

describe('SIGHUP', () => {
  it('reloads the config file in a running bot: a valid file applies to the next turn, an invalid one is refused and logged, both audited', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-sighup-'));
    const dataDir = path.join(dir, 'data');
    const file = path.join(dir, 'hermes.config.yaml');
    const writeQuietly = async (text: string) => {
      await writeFile(`${file}.next`, text);
      await utimes(`${file}.next`, QUIET_MTIME, QUIET_MTIME);
      await rename(`${file}.next`, file);
    };
    await writeQuietly(V1);
    ai = await startFakeOpenAI();
    ai.setHandler((req) => {
      const sys = systemText(req);
      return { text: sys.includes('Rule v2.') ? 'I follow rule v2' : sys.includes('Rule v1.') ? 'I follow rule v1' : 'I follow no rule' };
    });
    chat = startChat({ OPENAI_BASE_URL: ai.url, OPENAI_API_KEY: 'test', HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir, HERMES_CONFIG: file, LOG_LEVEL: 'info', HERMES_STREAMING: 'off' });
    const logLines = () => chat!.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

    chat.send('which rule?');
    await chat.waitFor(/hermes> I follow rule v1/, 60_000);

    await writeQuietly(V2);
    process.kill(chat.child.pid!, 'SIGHUP');
    await waitFor('the reload log line', () => logLines().some((l) => l.msg === 'config reloaded' && l.trigger === 'signal'), { timeoutMs: 15_000 });
    let from = chat.stdout().length;
    chat.send('which rule now?');
    await chat.waitFor(/hermes> I follow rule v2/, 30_000, from);

    await writeQuietly(`${V2}  slack:CENG:\n    respond: sometimes\n`);
    process.kill(chat.child.pid!, 'SIGHUP');
    await waitFor('the rejection log line', () => logLines().some((l) => String(l.msg).startsWith('config reload rejected')), { timeoutMs: 15_000 });
    const rejected = logLines().find((l) => String(l.msg).startsWith('config reload rejected'))!;
    expect(rejected).toMatchObject({ level: 50, trigger: 'signal' });
    expect(String(rejected.msg)).toContain('channels.slack:CENG.respond');
    from = chat.stdout().length;
    chat.send('and now?');
    await chat.waitFor(/hermes> I follow rule v2/, 30_000, from);
    // Only the signal reloaded: the file watch saw no change.
    expect(logLines().filter((l) => l.trigger === 'file')).toEqual([]);

    chat.endInput();
    expect(await chat.exited()).toBe(0);
    chat = undefined;

    const database = await openSqliteDatabase(path.join(dataDir, 'hermes.sqlite'));
    try {
      const audit = createAuditLog({ database, clock: { now: () => Date.now(), setTimer: () => () => undefined }, log: pino({ level: 'silent' }) });
      const rows = (await audit.list({ kind: 'config' }, { limit: 10, offset: 0 })).entries.reverse();
      expect(rows.map((r) => [r.outcome, r.detail.trigger ?? null])).toEqual([
        ['start', null],
        ['reloaded', 'signal'],
        ['reload_rejected', 'signal'],
      ]);
      expect(rows[1]!.detail).toMatchObject({ changed: ['channels'], configFile: file });
      expect(rows[2]!.detail).toMatchObject({ errors: [expect.stringContaining('channels.slack:CENG.respond')] });
    } finally {
      await database.close();
    }
  }, 120_000);
});
