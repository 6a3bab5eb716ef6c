import { spawnSync } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { createLogger } from '../../src/basics/log.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import { FAKE_CREDENTIALS } from '../helpers/fake-secrets.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('traces and logs', () => {
  it('traces every model and tool call of a turn, without secrets, and npm run trace prints it', async () => {
    h = await startHarness({ tools: [calculator] });
    // Every credential shape the redactor knows, in the user's message and in the model's answer.
    const pasted = FAKE_CREDENTIALS.map((c) => c.text).join('\n');
    h.fake.enqueue({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { expression: '2^10' } }] }, { text: `It is 1024. You sent:\n${pasted}` });
    await h.core.gateway.handleMessage({ id: 't1', conversation: conv('D1', { isDm: true }), speaker: user('U1'), text: `my keys are\n${pasted}\nwhat is 2^10?`, mentioned: false });
    await h.port.waitFor(isText);
    await h.core.gateway.idle();
    await h.core.close();
    const dir = path.join(h.dataDir, 'traces');
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    const text = await readFile(path.join(dir, files[0]!), 'utf8');
    for (const { shape, secret } of FAKE_CREDENTIALS) expect(text, shape).not.toContain(secret);
    expect(text).toContain('what is 2^10?');
    expect(text).not.toContain('test-key');
    const events = text.trim().split('\n').map((l) => JSON.parse(l) as { type: string; turnId: string });
    expect(events.map((e) => e.type)).toEqual(['turn_start', 'model_call', 'tool_call', 'model_call', 'turn_end']);
    expect(new Set(events.map((e) => e.turnId)).size).toBe(1);

    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/runtime/trace/trace-cli.ts', 'last'], { cwd: ROOT, env: { ...process.env, HERMES_DATA_DIR: h.dataDir }, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`TURN ${events[0]!.turnId}`);
    expect(r.stdout).toMatch(/TOOL calculator ok/);
    expect(r.stdout).toMatch(/answer: It is 1024\./);
    expect(r.stdout).toMatch(/END answered · 2 steps/);
    // The core is closed already: release the rest by hand.
    await h.fake.close();
    await rm(h.dataDir, { recursive: true, force: true });
    h = undefined;
  });

  it('redacts keys, tokens and Authorization headers in logs', () => {
    let out = '';
    const sink = new Writable({ write(chunk, _enc, cb) { out += String(chunk); cb(); } });
    const log = createLogger('info', sink);
    log.info({ apiKey: 'sk-live-1', config: { botToken: 'xoxb-2', signingSecret: 's3' }, headers: { authorization: 'Bearer abc' } }, 'hello');
    expect(out).toContain('hello');
    for (const s of ['sk-live-1', 'xoxb-2', 's3"', 'Bearer abc']) expect(out).not.toContain(s);
  });
});
