import { afterEach, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/basics/types.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A thread's messages reach the gateway one at a time, in the order Slack delivered them, on a
 * lone instance too (the real Bolt app against the fake Slack, the real core on SQLite, whose work
 * queue does not settle). Slack delivers each event as its own request, acknowledged before the
 * listener runs, so two messages of a thread are handled concurrently: handed over at once, the
 * later one's accept could commit first and its turn be claimed and answered before the earlier
 * message was accepted at all. Here the gateway's handover of the first message is held open, as
 * a slow accept (a stalled store, a loaded machine) would be.
 */
let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const CHANNEL = 'C0ORDER';

async function setup() {
  const started: string[] = [];
  const holds = new Map<string, () => void>();
  const holdText = new Set<string>();
  h = await startSlackHarness({
    // Each message its own turn and answer, so their order is visible (steer would fold the second into the first's turn).
    env: { HERMES_BUSY_MODE: 'queue' },
    wrapGateway: (g) => ({
      ...g,
      async handleMessage(m: InboundMessage) {
        started.push(m.text);
        if (holdText.has(m.text)) await new Promise<void>((resolve) => holds.set(m.text, resolve));
        return g.handleMessage(m);
      },
    }),
  });
  h.ai.setHandler((req) => {
    const last = [...req.messages].reverse().find((m) => m.role === 'user');
    const said = String(last?.content ?? '').replace(/^\[from [^\]]*\]\s*/, '').trim();
    return { text: `answer to ${said}` };
  });
  const thread = h.slack.nextTs();
  const mention = (text: string, threadTs = thread) => h!.mention(CHANNEL, 'U0ASK', text, { threadTs, pair: false });
  const answers = (threadTs = thread) => h!.slack.posts({ channel: CHANNEL, thread_ts: threadTs }).map((p) => p.text).filter((t) => t.startsWith('answer to'));
  return { started, holds, holdText, mention, answers, thread };
}

describe('slack: a thread in order on a lone instance', () => {
  it("hands a thread's next message to the gateway only once the one before is accepted; other threads are not held up", async () => {
    const { started, holds, holdText, mention, answers } = await setup();
    holdText.add('first');
    await mention('first');
    await waitFor('the first handover', () => holds.has('first'), { everyMs: 5 });
    await mention('second');
    // Acknowledged before `elsewhere` was sent; `elsewhere`, in another thread, is answered while
    // `second` waits for `first`.
    const other = h!.slack.nextTs();
    await mention('elsewhere', other);
    await waitFor('the other thread answered', () => answers(other).length === 1, { everyMs: 5 });
    expect(started).toEqual(['first', 'elsewhere']);
    expect(answers()).toEqual([]);

    holds.get('first')!();
    await waitFor('both answered', () => answers().length === 2, { everyMs: 5 });
    await h!.settled();
    expect(answers()).toEqual(['answer to first', 'answer to second']);
    expect(started).toEqual(['first', 'elsewhere', 'second']);
  });

  it('a redelivery of the held message waits in the line behind the later one and is answered once', async () => {
    const { started, holds, holdText, mention, answers, thread } = await setup();
    holdText.add('first');
    const ts = h!.slack.nextTs();
    const event = { type: 'app_mention', user: 'U0ASK', text: `<@${h!.slack.botUserId}> first`, ts, channel: CHANNEL, thread_ts: thread };
    expect((await h!.slack.sendEvent(h!.target, event, { eventId: 'Ev0FIRST' })).status).toBe(200);
    await waitFor('the first handover', () => holds.has('first'), { everyMs: 5 });
    await mention('second');
    // Slack retries the first delivery (as it does when the 200 was slow): it lines up behind `second`.
    expect((await h!.slack.sendEvent(h!.target, event, { eventId: 'Ev0FIRST', retryNum: 1 })).status).toBe(200);
    holds.get('first')!();
    await waitFor('both answered', () => answers().length === 2, { everyMs: 5 });
    await h!.settled();
    expect(answers()).toEqual(['answer to first', 'answer to second']);
    // The retry came to the gateway after `second` (its dedupe found it accepted), never before it.
    expect(started).toEqual(['first', 'second', 'first']);
  });
});
