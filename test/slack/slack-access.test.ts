import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/capabilities/toolkit/tool-api.js';
import { NOT_ALLOWED } from '../../src/gateway/user-messages.js';
import { renderMrkdwn } from '../../adapters/slack/render-mrkdwn.js';
import { settle } from '../reminders/manual-clock.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

/**
 * HERMES_ALLOW on Slack end to end: the real Bolt app against the fake Slack. UOK is listed, COPEN
 * is a listed channel, UADMIN is an admin, UNO is nobody.
 */

const runs: unknown[] = [];
const risky = defineTool({
  name: 'risky_action',
  description: 'Does something that must be approved',
  input: z.object({ target: z.string() }),
  needsApproval: true,
  sideEffects: true,
  async run(args) {
    runs.push(args);
    return `did it to ${args.target}`;
  },
});

let h: SlackHarness;
beforeAll(async () => {
  h = await startSlackHarness({ extraTools: [risky], env: { HERMES_ALLOW: 'slack:UOK,slack:COPEN', HERMES_ADMINS: 'slack:UADMIN' } });
});
afterAll(async () => {
  await h?.close();
});

const notice = renderMrkdwn(NOT_ALLOWED);
const ephemeralsTo = (userId: string) => h.slack.callsTo('chat.postEphemeral').filter((c) => c.args.user === userId);
const answered = (text: string) => h.slack.waitFor(`the answer "${text}"`, () => h.slack.posts().some((p) => p.text === text));
/** UNO's refused messages so far: the hourly notice counter, counted when the notice is decided (sent or not). */
/** Messages refused so far (each keeps its inbound mark, outcome 'refused'). */
const refusedCount = async () => Number((await h.core.database.db.selectFrom('hermes_inbound').select((eb) => eb.fn.countAll().as('n')).where('outcome', '=', 'refused').executeTakeFirstOrThrow()).n);

describe('HERMES_ALLOW on slack', () => {
  it('answers a listed user', async () => {
    h.ai.enqueue({ text: 'hello UOK' });
    await h.mention('C1', 'UOK', 'hi');
    await answered('hello UOK');
  });

  it('gives anyone else one ephemeral notice an hour, in the channel, and no model call', async () => {
    const before = h.ai.requests.length;
    const refusedBefore = await refusedCount();
    await h.mention('C1', 'UNO', 'hi there');
    await h.slack.waitFor('the notice', () => ephemeralsTo('UNO').length === 1);
    const [first] = ephemeralsTo('UNO');
    expect(first!.args).toMatchObject({ channel: 'C1', user: 'UNO', text: notice });
    expect(first!.args.thread_ts).toBeUndefined(); // the mention opened no thread to put it in
    await h.mention('C1', 'UNO', 'hello??');
    await settle(async () => (await refusedCount()) === refusedBefore + 2, 15_000).catch(async (e: Error) => { throw new Error(`${e.message}: count ${await refusedCount()}`); });
    await h.settled(); // the second refusal's notice check is over, too
    expect(ephemeralsTo('UNO')).toHaveLength(1);
    expect(h.ai.requests.length).toBe(before);
    expect(h.slack.posts({ channel: 'C1' }).filter((p) => p.text.includes('hello??'))).toEqual([]);
  });

  it('answers anyone in a listed channel, and an admin anywhere', async () => {
    h.ai.enqueue({ text: 'open channel answer' });
    await h.mention('COPEN', 'UNO', 'hi');
    await answered('open channel answer');
    h.ai.enqueue({ text: 'admin answer' });
    await h.dm('DADMIN', 'UADMIN', 'hi');
    await answered('admin answer');
  });

  it('/hermes answers the same notice, for commands and tasks alike', async () => {
    const before = h.ai.requests.length;
    for (const text of ['status', 'write a poem']) {
      const { responseId } = await h.slack.sendCommand(h.target, { text, userId: 'UNO', channelId: 'C1' });
      await h.slack.waitFor('the command answer', () => h.slack.responses.some((r) => r.id === responseId));
      expect(h.slack.responses.find((r) => r.id === responseId)!.body).toMatchObject({ response_type: 'ephemeral', text: notice });
    }
    expect(h.ai.requests.length).toBe(before);
  });

  it('a click by someone not allowed is refused with the notice; the action runs only when an allowed person approves', async () => {
    h.ai.enqueue({ toolCalls: [{ id: 'call_r', name: 'risky_action', arguments: { target: 'prod' } }] });
    const root = await h.mention('C1', 'UOK', 'do the risky thing');
    await h.slack.waitFor('the approval prompt', () => h.slack.approvalPrompts().length > 0);
    const prompt = h.slack.approvalPrompts()[0]!;
    const approvalId = JSON.stringify(prompt.args.blocks).match(/"value":"([^"]+)"/)![1]!;

    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: approvalId, userId: 'UNOBODY', channelId: 'C1', messageTs: prompt.ts, threadTs: root });
    await h.slack.waitFor('the refusal', () => ephemeralsTo('UNOBODY').length === 1);
    expect(ephemeralsTo('UNOBODY')[0]!.args.text).toBe(notice);
    expect(h.slack.callsTo('chat.update')).toHaveLength(0);

    h.ai.enqueue({ text: 'Done on prod.' });
    await h.slack.sendClick(h.target, { actionId: 'hermes_approve', value: approvalId, userId: 'UOK', channelId: 'C1', messageTs: prompt.ts, threadTs: root });
    await answered('Done on prod.');
    expect(runs).toEqual([{ target: 'prod' }]);
  });
});
