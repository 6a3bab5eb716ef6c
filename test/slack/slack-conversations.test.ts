import { afterEach, describe, expect, it } from 'vitest';
import { stripPartMarker } from '../../src/basics/text/chunk-markdown.js';
import { startSlackHarness, type SlackHarness } from './slack-harness.js';

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const lastUserText = (h: SlackHarness) => {
  const req = h.ai.requests.at(-1)!;
  const user = req.messages.filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content);
};

describe('slack conversations (real Bolt, fake Slack, fake model)', () => {
  it('answers a channel mention in the thread of the mention, with progress shown and cleared', async () => {
    h = await startSlackHarness();
    h.slack.setUser('U1', 'Ada');
    h.slack.setUser('U2', 'Grace');
    h.ai.enqueue({ text: 'Hello **Ada**!' });
    const ts = await h.mention('C1', 'U1', 'say hi to <@U2>', { pair: false });
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    const [post] = h.slack.posts();
    expect(post).toMatchObject({ channel: 'C1', thread_ts: ts, text: 'Hello *Ada*!' });
    expect(post!.args).toMatchObject({ unfurl_links: false, unfurl_media: false });
    // The bot's own mention is gone; the other one is readable and still addressable.
    expect(lastUserText(h)).toContain('say hi to @Grace (<@U2>)');
    expect(lastUserText(h)).not.toContain('<@UBOT>');
    await h.slack.waitFor('reaction removed', () => h!.slack.callsTo('reactions.remove').length === 1);
    expect(h.slack.callsTo('reactions.add')[0]!.args).toMatchObject({ channel: 'C1', timestamp: ts, name: 'hourglass_flowing_sand' });
    expect(h.slack.callsTo('reactions.remove')[0]!.args).toMatchObject({ channel: 'C1', timestamp: ts });
  });

  it('answers a DM in the DM, unthreaded', async () => {
    h = await startSlackHarness();
    h.ai.enqueue({ text: 'dm answer' });
    await h.dm('D1', 'U1', 'hello there');
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    expect(h.slack.posts()[0]).toMatchObject({ channel: 'D1', thread_ts: undefined, text: 'dm answer' });
  });

  it('follows up in a thread it is part of, and ignores top-level chatter and other threads', async () => {
    h = await startSlackHarness();
    h.ai.enqueue({ text: 'first' }, { text: 'second' });
    const root = await h.mention('C1', 'U1', 'start');
    await h.slack.waitFor('first answer', () => h!.slack.posts().length === 1);
    await h.say('C1', 'U1', 'top-level chatter');
    await h.say('C1', 'U1', 'a thread we never joined', { threadTs: '1600000000.000001' });
    await h.say('C1', 'U1', 'and a follow-up', { threadTs: root });
    await h.slack.waitFor('second answer', () => h!.slack.posts().length === 2);
    expect(h.slack.posts()[1]).toMatchObject({ channel: 'C1', thread_ts: root, text: 'second' });
    expect(lastUserText(h)).toContain('and a follow-up');
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(2);
  });

  it('acknowledges at once while the model is slow, and remembers its threads across a restart', async () => {
    h = await startSlackHarness();
    // The model does not answer until the test lets it: a model as slow as the test likes.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    h.ai.setHandler(async () => {
      await answered;
      return { text: 'slow first' };
    });
    const started = Date.now();
    const root = await h.mention('C2', 'U1', 'take your time');
    // Both deliveries were answered while the model had not: the turn runs after the ack.
    expect(Date.now() - started).toBeLessThan(2000);
    await h.slack.waitFor('the model asked', () => h!.ai.inFlight === 1);
    expect(h.slack.posts()).toHaveLength(0);
    answer();
    await h.slack.waitFor('first answer', () => h!.slack.posts().length === 1, 10_000);
    expect(h.slack.posts()[0]).toMatchObject({ channel: 'C2', thread_ts: root, text: 'slow first' });
    await h.restart();
    h.ai.enqueue({ text: 'still here' });
    await h.say('C2', 'U1', 'follow-up without a mention', { threadTs: root });
    await h.slack.waitFor('answer after restart', () => h!.slack.posts().length === 2);
    expect(h.slack.posts()[1]).toMatchObject({ channel: 'C2', thread_ts: root, text: 'still here' });
  });

  it('ignores bots, itself, edits and joins', async () => {
    h = await startSlackHarness();
    const base = { type: 'message', channel_type: 'im', channel: 'D1', text: 'x' };
    await h.slack.sendEvent(h.target, { ...base, user: 'U9', bot_id: 'B9', ts: h.slack.nextTs() });
    await h.slack.sendEvent(h.target, { ...base, user: h.slack.botUserId, ts: h.slack.nextTs() });
    await h.slack.sendEvent(h.target, { ...base, subtype: 'message_changed', ts: h.slack.nextTs(), message: { text: 'edited' } });
    await h.slack.sendEvent(h.target, { ...base, user: 'U1', subtype: 'channel_join', ts: h.slack.nextTs() });
    h.ai.enqueue({ text: 'only this' });
    await h.dm('D1', 'U1', 'real one');
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(1);
    expect(lastUserText(h)).toContain('real one');
  });

  it('replies once to a retried event and to the app_mention + message pair', async () => {
    h = await startSlackHarness();
    h.ai.setLatency(200);
    h.ai.enqueue({ text: 'one reply' });
    const ts = h.slack.nextTs();
    const ev = { user: 'U1', text: `<@${h.slack.botUserId}> in a thread`, ts, channel: 'C1', thread_ts: '1500000000.000001' };
    await h.slack.sendEvent(h.target, { type: 'app_mention', ...ev }, { eventId: 'EvA' });
    await h.slack.sendEvent(h.target, { type: 'message', channel_type: 'channel', ...ev }, { eventId: 'EvB' });
    await h.slack.sendEvent(h.target, { type: 'app_mention', ...ev }, { eventId: 'EvA', retryNum: 1 });
    await h.slack.sendEvent(h.target, { type: 'message', channel_type: 'channel', ...ev }, { eventId: 'EvB', retryNum: 2 });
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    await h.settled();
    expect(h.slack.posts()).toHaveLength(1);
    expect(h.ai.requests).toHaveLength(1);
  });

  it('processes a retry whose first delivery never reached the queue', async () => {
    let failures = 1;
    h = await startSlackHarness({
      wrapGateway: (g) => ({
        ...g,
        handleMessage: async (m) => {
          if (failures-- > 0) throw new Error('store briefly unavailable');
          return g.handleMessage(m);
        },
      }),
    });
    h.ai.enqueue({ text: 'made it' });
    const ev = { type: 'message', channel_type: 'im', user: 'U1', text: 'hello', ts: h.slack.nextTs(), channel: 'D1' };
    await h.slack.sendEvent(h.target, ev, { eventId: 'EvX' });
    // Nothing was queued (the gateway threw before accepting it), so idle means nothing will run.
    await h.core.gateway.idle();
    expect(h.slack.posts()).toHaveLength(0);
    expect(h.ai.requests).toHaveLength(0);
    await h.slack.sendEvent(h.target, ev, { eventId: 'EvX', retryNum: 1 });
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    expect(h.slack.posts()[0]!.text).toBe('made it');
  });

  it('refuses a badly signed request with 401 and never calls the model', async () => {
    h = await startSlackHarness();
    const res = await h.slack.sendEvent(h.target, { type: 'message', channel_type: 'im', user: 'U1', text: 'hi', ts: h.slack.nextTs(), channel: 'D1' }, { secret: 'wrong-secret' });
    expect(res.status).toBe(401);
    // Refused before any handler ran: nothing can be in flight once the 401 is back.
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(0);
    expect(h.slack.posts()).toHaveLength(0);
  });

  it('serves /healthz: 503 until ready, 200 once ready', async () => {
    h = await startSlackHarness();
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
    h.ready = false;
    expect((await fetch(`${h.base}/healthz`)).status).toBe(503);
    h.ready = true;
  });

  it('handles 30 channels at once without cross-talk', async () => {
    h = await startSlackHarness();
    h.ai.setHandler((req) => {
      const users = req.messages.filter((m) => m.role === 'user');
      const text = String(users.at(-1)?.content ?? '');
      const tag = /token-(\d+)/.exec(text)?.[1] ?? 'none';
      return { text: `answer for token-${tag}`, delayMs: 20 + (Number(tag) % 7) * 15 };
    });
    const roots = await Promise.all(Array.from({ length: 30 }, (_, i) => h!.mention(`C${100 + i}`, `U${i}`, `question token-${i}`)));
    await h.slack.waitFor('30 answers', () => h!.slack.posts().length === 30, 20_000);
    for (let i = 0; i < 30; i++) {
      const posts = h.slack.posts({ channel: `C${100 + i}` });
      expect(posts).toHaveLength(1);
      expect(posts[0]).toMatchObject({ thread_ts: roots[i], text: `answer for token-${i}` });
    }
  });

  it('delivers a 60,000-character answer whole and in order, in parts with markers on their own lines', async () => {
    h = await startSlackHarness();
    const lines = Array.from({ length: 1200 }, (_, i) => `line ${String(i).padStart(4, '0')} ${'lorem ipsum '.repeat(3)}`.padEnd(50, '.'));
    const answer = lines.join('\n');
    expect(answer.length).toBeGreaterThanOrEqual(60_000);
    h.ai.enqueue({ text: answer });
    await h.dm('D1', 'U1', 'long please');
    await h.slack.waitFor('several parts', () => h!.slack.posts().length >= 16, 15_000);
    await h.core.gateway.idle();
    const posts = h.slack.posts();
    const n = posts.length;
    posts.forEach((p, i) => {
      expect(p.text.length).toBeLessThanOrEqual(4000);
      expect(p.text.split('\n').at(-1)).toBe(`(${i + 1}/${n})`);
    });
    const got = posts.map((p) => stripPartMarker(p.text)).join('\n');
    expect(got).toBe(answer);
  });

  it('neutralises broadcast mentions from the model', async () => {
    h = await startSlackHarness();
    h.ai.enqueue({ text: 'Attention <!channel> <!here> <!everyone> <!subteam^S1|@devs> @channel @here @everyone, and `<!here>`' });
    await h.dm('D1', 'U1', 'ping everyone please');
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1);
    const text = h.slack.posts()[0]!.text;
    expect(text).not.toMatch(/<!/);
    expect(text).not.toMatch(/(^|[^\u2060])@(channel|here|everyone)\b/);
    expect(text).toContain('&lt;!channel&gt;');
  });

  it('honours a 429 Retry-After from Slack and posts exactly once', async () => {
    h = await startSlackHarness();
    h.slack.rateLimitNext('chat.postMessage', 1);
    h.ai.enqueue({ text: 'after the wait' });
    await h.dm('D1', 'U1', 'hi');
    await h.slack.waitFor('the answer', () => h!.slack.posts().length === 1, 10_000);
    const attempts = h.slack.callsTo('chat.postMessage');
    expect(attempts.map((c) => c.status)).toEqual([429, 200]);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    await h.core.gateway.idle();
    expect(h.slack.posts()).toHaveLength(1);
  });

  it('never repeats a post that timed out (it may have landed)', async () => {
    h = await startSlackHarness({ callTimeoutMs: 300 });
    h.slack.delayNext('chat.postMessage', 700);
    h.ai.enqueue({ text: 'slow post' });
    await h.dm('D1', 'U1', 'hi');
    await h.slack.waitFor('the post attempt', () => h!.slack.callsTo('chat.postMessage').length === 1);
    // The turn (and with it every retry the adapter might make) is over once the gateway is idle.
    await h.core.gateway.idle();
    expect(h.slack.callsTo('chat.postMessage')).toHaveLength(1);
  });

  it('answers Slack\'s URL verification challenge', async () => {
    h = await startSlackHarness();
    const body = JSON.stringify({ token: 'legacy', challenge: 'c-123', type: 'url_verification' });
    const ts = String(Math.floor(Date.now() / 1000));
    const { createHmac } = await import('node:crypto');
    const sig = 'v0=' + createHmac('sha256', h.slack.signingSecret).update(`v0:${ts}:${body}`).digest('hex');
    const res = await fetch(h.target, { method: 'POST', headers: { 'content-type': 'application/json', 'x-slack-request-timestamp': ts, 'x-slack-signature': sig }, body });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('c-123');
  });

  it("answers Slack's unsigned ssl_check with 200 and lets nothing it carries through", async () => {
    h = await startSlackHarness();
    const callsBefore = h.slack.calls.length;
    const smuggled = encodeURIComponent(JSON.stringify({ type: 'block_actions', user: { id: 'U1' }, actions: [{ action_id: 'x' }] }));
    const res = await fetch(h.target, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)) }, body: `ssl_check=1&token=legacy&payload=${smuggled}` });
    expect(res.status).toBe(200);
    // The same form without ssl_check is unsigned: refused.
    const refused = await fetch(h.target, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-slack-request-timestamp': String(Math.floor(Date.now() / 1000)) }, body: `token=legacy&payload=${smuggled}` });
    expect(refused.status).toBe(401);
    await h.core.gateway.idle();
    expect(h.ai.requests).toHaveLength(0);
    expect(h.slack.calls.length).toBe(callsBefore);
  });

  it('tells the user in the thread when the model is down, and clears the reaction', async () => {
    h = await startSlackHarness();
    h.ai.enqueue({ status: 500, body: { error: { message: 'upstream exploded', type: 'server_error' } } });
    const ts = await h.mention('C7', 'U1', 'anything');
    await h.slack.waitFor('an error message', () => h!.slack.posts().length === 1);
    const post = h.slack.posts()[0]!;
    expect(post).toMatchObject({ channel: 'C7', thread_ts: ts });
    expect(post.text).toMatch(/language model/i);
    await h.slack.waitFor('reaction removed', () => h!.slack.callsTo('reactions.remove').length === 1);
  });
});
