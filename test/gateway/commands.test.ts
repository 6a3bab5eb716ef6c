import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { memoryTools } from '../../tools/memory.js';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { createApprovalStore } from '../../src/state/approvals/approval-store.js';
import { systemClock } from '../../src/basics/clock.js';
import { COMMANDS, parseCommand } from '../../src/gateway/commands.js';
import { conv, isApproval, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const place = conv('C5', { threadId: '9.9' });
const me = user('U5');
const run = (text: string, speaker = me) => h!.core.gateway.handleCommand({ conversation: place, speaker, text });

describe('/hermes commands', () => {
  it('parses subcommands and treats anything else as a task', () => {
    expect(parseCommand('help')).toEqual({ kind: 'command', name: 'help', arg: '' });
    expect(parseCommand('  forget  f12 ')).toEqual({ kind: 'command', name: 'forget', arg: 'f12' });
    expect(parseCommand('NEW')).toMatchObject({ kind: 'command', name: 'new' });
    expect(parseCommand('summarise the news')).toEqual({ kind: 'task', text: 'summarise the news' });
    expect(parseCommand('')).toEqual({ kind: 'empty' });
  });

  it('help lists every subcommand, privately', async () => {
    h = await startHarness();
    const r = await run('help');
    expect(r.kind).toBe('private');
    for (const c of COMMANDS) expect(r.text).toContain(`/hermes ${c.usage}`);
  });

  it('a task answers in the channel', async () => {
    h = await startHarness();
    h.fake.enqueue({ text: 'task done' });
    const r = await run('check the build');
    expect(r.kind).toBe('task');
    const t = await h.port.waitFor(isText);
    expect(t.text).toBe('task done');
    expect(t.conversation).toEqual(place);
  });

  it('memory lists my facts and forget deletes them, only mine', async () => {
    h = await startHarness({ tools: memoryTools });
    h.fake.enqueue({ toolCalls: [{ name: 'remember_fact', arguments: { fact: 'I deploy on Fridays' } }] }, { text: 'ok' });
    await h.core.gateway.handleMessage({ id: 'x1', conversation: place, speaker: me, text: 'remember I deploy on Fridays', mentioned: true });
    await h.port.waitFor(isText);
    const mem = await run('memory');
    expect(mem.text).toContain('I deploy on Fridays');
    expect((await run('memory', user('U6'))).text).toMatch(/do not remember anything/);
    expect((await run('forget all', user('U6'))).text).toMatch(/nothing to forget/);
    const id = /`(\w+)` I deploy/.exec(mem.text)?.[1];
    expect(id).toBeTruthy();
    expect((await run(`forget ${id}`)).text).toContain(`Forgot fact \`${id}\``);
    expect((await run('memory')).text).toMatch(/do not remember anything/);
  });

  it('new starts a fresh session; the old history no longer reaches the model', async () => {
    h = await startHarness();
    h.fake.enqueue({ text: 'first' });
    await h.core.gateway.handleMessage({ id: 'n1', conversation: place, speaker: me, text: 'OLD-MARKER', mentioned: true });
    await h.port.waitFor(isText);
    expect((await run('new')).text).toMatch(/fresh conversation/);
    h.fake.enqueue({ text: 'second' });
    await h.core.gateway.handleMessage({ id: 'n2', conversation: place, speaker: me, text: 'hello again', mentioned: true });
    await h.port.waitForCount((e) => e.kind === 'text', 2);
    expect(JSON.stringify(h.fake.requests[1]!.messages)).not.toContain('OLD-MARKER');
  });

  it('status answers privately; admins see the deployment', async () => {
    h = await startHarness({ env: { HERMES_ADMINS: 'slack:UADM' } });
    h.fake.enqueue({ text: 'hi' });
    await h.core.gateway.handleMessage({ id: 's1', conversation: place, speaker: me, text: 'hi', mentioned: true });
    await h.port.waitFor(isText);
    await h.core.gateway.idle();
    const mine = await run('status');
    expect(mine.kind).toBe('private');
    expect(mine.text).toMatch(/Your usage/);
    expect(mine.text).toMatch(/Turns: 1/);
    const admin = await run('status', user('UADM'));
    expect(admin.text).toMatch(/Whole deployment/);
    expect(admin.text).toMatch(/open approvals: 0/);
    expect((await run('status', user('U9'))).text).toMatch(/No turns/);
  });

  it('status says the usage is unavailable, not zero, when the traces cannot be read', async () => {
    h = await startHarness({ env: { HERMES_ADMINS: 'slack:UADM' } });
    // A file where the traces folder belongs: reading it fails with ENOTDIR, not "no traces".
    await rm(path.join(h.dataDir, 'traces'), { recursive: true, force: true });
    await writeFile(path.join(h.dataDir, 'traces'), 'not a folder');
    const mine = await run('status');
    expect(mine.text).toMatch(/Usage numbers are unavailable: the traces could not be read; an admin can check the log\./);
    expect(mine.text).not.toMatch(/No turns|Turns: 0/);
    expect((await run('status', user('UADM'))).text).toMatch(/could not be read \(ENOTDIR\)/);
  });

  it('a crash between "approved" and "finished" never runs the tool again: the outcome is reported unknown', async () => {
    const runs: unknown[] = [];
    const tool = defineTool({ name: 'risky_action', description: 'x', input: z.object({ n: z.number() }), needsApproval: true, sideEffects: true, run: async (a) => { runs.push(a); return 'ran'; } });
    h = await startHarness({ extraTools: [tool] });
    h.fake.enqueue({ toolCalls: [{ id: 'call_x', name: 'risky_action', arguments: { n: 1 } }] });
    await h.core.gateway.handleMessage({ id: 'r1', conversation: place, speaker: me, text: 'do it', mentioned: true });
    const shown = await h.port.waitFor(isApproval);
    // What a crash right after the side effect started leaves behind:
    const approvals = createApprovalStore(h.core.database, systemClock);
    expect((await approvals.decide(shown.view.id, 'approved', me)).applied).toBe(true);
    expect(await approvals.markRunning(shown.view.id)).toBe(true);
    h.fake.enqueue({ text: 'I cannot tell whether it ran.' });
    await h.restart();
    expect((await h.port.waitFor(isText)).text).toBe('I cannot tell whether it ran.');
    const toolMsg = h.fake.requests.at(-1)!.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'call_x');
    expect(String(toolMsg?.content)).toMatch(/outcome is unknown/);
    expect(runs).toHaveLength(0);
    expect((await h.core.gateway.decideApproval({ approvalId: shown.view.id, decision: 'approve', decidedBy: me })).kind).toBe('already');
  });
});
