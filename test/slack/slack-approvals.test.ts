import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import type { ApiCall } from '../fakes/slack/fake-slack.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function riskyTool(runs: unknown[]) {
  return defineTool({
    name: 'risky_action',
    description: 'Does something that must be approved',
    input: z.object({ target: z.string(), note: z.string() }),
    needsApproval: true,
    sideEffects: true,
    async run(args) {
      runs.push(args);
      return `did it to ${args.target}`;
    },
  });
}

type Block = { type: string; text?: { text: string }; elements?: Array<{ action_id?: string; value?: string; style?: string; text: { text: string } }> };

/** Mentions the bot, lets the model ask for risky_action, and returns the posted prompt. */
async function askForApproval(h: SlackHarness, user = 'U1') {
  h.ai.enqueue({ toolCalls: [{ id: 'call_1', name: 'risky_action', arguments: { target: 'prod', note: 'a <b> & "c"' } }] });
  const root = await h.mention('C1', user, 'do the risky thing');
  await h.slack.waitFor('the approval prompt', () => h.slack.approvalPrompts().length > 0);
  const prompt = h.slack.approvalPrompts()[0]!;
  const blocks = prompt.args.blocks as Block[];
  const buttons = blocks.find((b) => b.type === 'actions')!.elements!;
  return { root, prompt, blocks, approvalId: buttons[0]!.value!, buttons };
}

const click = (h: SlackHarness, actionId: 'hermes_approve' | 'hermes_deny', approvalId: string, userId: string, messageTs: string, threadTs?: string) =>
  h.slack.sendClick(h.target, { actionId, value: approvalId, userId, channelId: 'C1', messageTs, threadTs });

const updates = (h: SlackHarness): ApiCall[] => h.slack.callsTo('chat.update');

describe('slack approvals', () => {
  it('posts the prompt in the thread with tool, exact arguments and two buttons; approve runs the tool once', async () => {
    const runs: unknown[] = [];
    h = await startSlackHarness({ extraTools: [riskyTool(runs)] });
    const { root, prompt, blocks, approvalId, buttons } = await askForApproval(h);
    expect(prompt).toMatchObject({ channel: 'C1', thread_ts: root });
    expect(h.slack.callsTo('chat.postEphemeral')).toHaveLength(0);
    const section = blocks[0]!.text!.text;
    expect(section).toContain('risky_action');
    expect(section).toContain('```');
    expect(section).toContain('"note": "a &lt;b&gt; &amp; \\"c\\""');
    expect(buttons.map((b) => [b.action_id, b.text.text, b.value])).toEqual([
      ['hermes_approve', 'Approve', approvalId],
      ['hermes_deny', 'Deny', approvalId],
    ]);
    expect(buttons[0]!.style).toBe('primary');

    h.ai.enqueue({ text: 'Done on prod.' });
    const res = await click(h, 'hermes_approve', approvalId, 'U1', prompt.ts, root);
    expect(res.status).toBe(200);
    await h.slack.waitFor('the final answer', () => h!.slack.posts().some((p) => p.text === 'Done on prod.'));
    expect(runs).toEqual([{ target: 'prod', note: 'a <b> & "c"' }]);
    await h.slack.waitFor('the prompt edited', () => updates(h!).length === 1);
    const update = updates(h)[0]!.args;
    expect(update).toMatchObject({ channel: 'C1', ts: prompt.ts });
    expect(JSON.stringify(update.blocks)).not.toContain('"actions"');
    expect(JSON.stringify(update.blocks)).toContain('approved by <@U1>');
  });

  it('deny: the tool does not run and the prompt names who denied', async () => {
    const runs: unknown[] = [];
    h = await startSlackHarness({ extraTools: [riskyTool(runs)] });
    const { root, prompt, approvalId } = await askForApproval(h);
    h.ai.enqueue({ text: 'Understood, I did not do it.' });
    await click(h, 'hermes_deny', approvalId, 'U1', prompt.ts, root);
    await h.slack.waitFor('the prompt edited', () => updates(h!).length === 1);
    expect(JSON.stringify(updates(h)[0]!.args.blocks)).toContain('denied by <@U1>');
    await h.slack.waitFor('the final answer', () => h!.slack.posts().some((p) => p.text === 'Understood, I did not do it.'));
    expect(runs).toHaveLength(0);
  });

  it('a non-requester gets a private refusal and nothing changes; a double click applies once', async () => {
    const runs: unknown[] = [];
    h = await startSlackHarness({ extraTools: [riskyTool(runs)] });
    const { root, prompt, approvalId } = await askForApproval(h);
    await click(h, 'hermes_approve', approvalId, 'U2', prompt.ts, root);
    await h.slack.waitFor('an ephemeral refusal', () => h!.slack.callsTo('chat.postEphemeral').length === 1);
    const refusal = h.slack.callsTo('chat.postEphemeral')[0]!.args;
    expect(refusal).toMatchObject({ channel: 'C1', user: 'U2', thread_ts: root });
    expect(String(refusal.text)).toMatch(/only the person who asked/i);
    expect(updates(h)).toHaveLength(0);
    expect(runs).toHaveLength(0);

    h.ai.enqueue({ text: 'Done once.' });
    await Promise.all([click(h, 'hermes_approve', approvalId, 'U1', prompt.ts, root), click(h, 'hermes_approve', approvalId, 'U1', prompt.ts, root)]);
    await h.slack.waitFor('the final answer', () => h!.slack.posts().some((p) => p.text === 'Done once.'));
    await h.core.gateway.idle();
    expect(runs).toHaveLength(1);
    expect(updates(h)).toHaveLength(1);
    // The second click is told privately that it was already decided.
    await h.slack.waitFor('second ephemeral', () => h!.slack.callsTo('chat.postEphemeral').length === 2);
    expect(String(h.slack.callsTo('chat.postEphemeral')[1]!.args.text)).toMatch(/already decided/i);
  });

  it('survives a restart with the approval pending: approving afterwards runs the tool exactly once', async () => {
    const runs: unknown[] = [];
    h = await startSlackHarness({ extraTools: [riskyTool(runs)] });
    const { root, prompt, approvalId } = await askForApproval(h);
    await h.restart();
    h.ai.enqueue({ text: 'Done after restart.' });
    await click(h, 'hermes_approve', approvalId, 'U1', prompt.ts, root);
    await h.slack.waitFor('the final answer', () => h!.slack.posts().some((p) => p.text === 'Done after restart.'), 10_000);
    await click(h, 'hermes_approve', approvalId, 'U1', prompt.ts, root);
    await h.slack.waitFor('already-decided note', () => h!.slack.callsTo('chat.postEphemeral').length === 1);
    await h.core.gateway.idle();
    expect(runs).toHaveLength(1);
    expect(JSON.stringify(updates(h).at(-1)!.args.blocks)).toContain('approved by <@U1>');
  });

  it("refuses the requester's own click when its payload names another channel", async () => {
    const runs: unknown[] = [];
    h = await startSlackHarness({ extraTools: [riskyTool(runs)] });
    const { root, prompt, approvalId } = await askForApproval(h);
    const res = await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: approvalId, userId: 'U1', channelId: 'C_OTHER', messageTs: prompt.ts, threadTs: root });
    expect(res.status).toBe(200);
    await h.slack.waitFor('an ephemeral refusal', () => h!.slack.callsTo('chat.postEphemeral').length === 1);
    expect(String(h.slack.callsTo('chat.postEphemeral')[0]!.args.text)).toMatch(/belongs to another conversation/);
    await h.core.gateway.idle();
    expect(updates(h)).toHaveLength(0);
    expect(runs).toHaveLength(0);
  });

  it('acknowledges a click with an action id that is not ours at once (no 404 after 3 s)', async () => {
    h = await startSlackHarness();
    const started = Date.now();
    const res = await h.slack.sendClick(h.target, { actionId: 'some_other_button', value: 'x', userId: 'U1', channelId: 'C1', messageTs: '1.1' });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it('rejects validly signed requests dated more than 5 minutes in the future or the past', async () => {
    h = await startSlackHarness();
    for (const skewS of [10 * 60, 365 * 24 * 3600, -10 * 60]) {
      const res = await h.slack.sendEvent(h.target, { type: 'message', channel_type: 'im', user: 'U1', text: `dated ${skewS}`, ts: h.slack.nextTs(), channel: 'D1' }, { skewS });
      expect(res.status).toBe(401);
    }
    h.ai.enqueue({ text: 'hello on time' });
    const ok = await h.slack.sendEvent(h.target, { type: 'message', channel_type: 'im', user: 'U1', text: 'on time', ts: h.slack.nextTs(), channel: 'D1' }, { skewS: 120 });
    expect(ok.status).toBe(200);
    await h.slack.waitFor('the on-time answer', () => h!.slack.posts().some((p) => p.text === 'hello on time'));
    expect(h.ai.requests).toHaveLength(1);
  });
});
