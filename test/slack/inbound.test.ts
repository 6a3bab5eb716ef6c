import { describe, expect, it } from 'vitest';
import { classifyEvent } from '../../adapters/slack/inbound-event.js';
import { cleanInboundText, mentionedUserIds, mentionsUser } from '../../adapters/slack/inbound-text.js';

const BOT = 'UBOT';
const names: Record<string, string> = { U1: 'Ada' };

describe('cleanInboundText', () => {
  it('strips the bot mention and makes other mentions readable', () => {
    expect(cleanInboundText('<@UBOT> ask <@U1> and <@U2> in <#C1|general>', BOT, (id) => names[id])).toBe(
      'ask @Ada (<@U1>) and <@U2> in #general',
    );
  });
  it('turns links and broadcasts into text and unescapes entities', () => {
    expect(cleanInboundText('<!here> see <https://a.b/c|docs> &lt;tag&gt; &amp; <https://x.y>', BOT, () => undefined)).toBe(
      '@here see docs (https://a.b/c) <tag> & https://x.y',
    );
  });
  it('lists mentioned users except the bot', () => {
    expect(mentionedUserIds('<@UBOT> <@U1> <@U1> <@W2|x>', BOT)).toEqual(['U1', 'W2']);
  });
  it('tells a mention of a user, plain or labelled, the same on every call and for whichever id is asked', () => {
    for (let i = 0; i < 3; i++) {
      expect(mentionsUser('hey <@UBOT> there', BOT)).toBe(true);
      expect(mentionsUser('hey <@UBOT|hermes> there', BOT)).toBe(true);
      expect(mentionsUser('hey <@UBOTX> and <@UBOT there', BOT)).toBe(false);
      expect(mentionsUser('hey <@UBOT> there', 'U1')).toBe(false);
      expect(mentionsUser('<@U1>', 'U1')).toBe(true);
    }
    expect(mentionsUser('a <@U.1> b', 'U.1')).toBe(true);
    expect(mentionsUser('a <@UX1> b', 'U.1')).toBe(false);
    expect(cleanInboundText('<@UBOT> one <@UBOT|h> two', BOT, () => undefined)).toBe('one two');
  });
});

describe('classifyEvent', () => {
  const base = { type: 'message', user: 'U1', text: 'hi', ts: '100.1', channel: 'C1', channel_type: 'channel' };

  it('threads a top-level mention on itself', () => {
    const v = classifyEvent({ ...base, type: 'app_mention', text: '<@UBOT> hi', channel_type: undefined }, 'T1', BOT);
    expect(v).toMatchObject({ kind: 'forward', message: { id: 'C1:100.1', mentioned: true, replyTo: '100.1', conversation: { channelId: 'C1', threadId: '100.1', isDm: false } } });
  });
  it('gives the mention and the message of one post the same id', () => {
    const a = classifyEvent({ ...base, type: 'app_mention', text: '<@UBOT> hi', thread_ts: '90.0' }, 'T1', BOT);
    const b = classifyEvent({ ...base, text: '<@UBOT> hi', thread_ts: '90.0' }, 'T1', BOT);
    expect(a.kind === 'forward' && b.kind === 'forward' && a.message.id === b.message.id && b.message.mentioned).toBe(true);
  });
  it('drops the message half of a top-level mention; forwards other top-level posts (threaded on themselves) and thread replies unmentioned', () => {
    expect(classifyEvent({ ...base, text: '<@UBOT> hi' }, 'T1', BOT)).toEqual({ kind: 'skip', reason: 'channel_top_level' });
    expect(classifyEvent(base, 'T1', BOT)).toMatchObject({ kind: 'forward', message: { mentioned: false, replyTo: '100.1', conversation: { threadId: '100.1' } } });
    expect(classifyEvent({ ...base, thread_ts: '90.0' }, 'T1', BOT)).toMatchObject({ kind: 'forward', message: { mentioned: false, conversation: { threadId: '90.0' } } });
  });
  it('forwards DMs, threaded only when written in a thread', () => {
    expect(classifyEvent({ ...base, channel: 'D1', channel_type: 'im' }, 'T1', BOT)).toMatchObject({ kind: 'forward', message: { conversation: { isDm: true, threadId: undefined } } });
    expect(classifyEvent({ ...base, channel: 'D1', channel_type: 'im', thread_ts: '50.0' }, 'T1', BOT)).toMatchObject({ kind: 'forward', message: { conversation: { threadId: '50.0' } } });
  });
  it('ignores bots, itself, edits and joins', () => {
    expect(classifyEvent({ ...base, channel_type: 'im', bot_id: 'B1' }, 'T1', BOT)).toMatchObject({ kind: 'skip', reason: 'bot' });
    expect(classifyEvent({ ...base, channel_type: 'im', user: BOT }, 'T1', BOT)).toMatchObject({ kind: 'skip', reason: 'self' });
    expect(classifyEvent({ ...base, channel_type: 'im', subtype: 'message_changed' }, 'T1', BOT)).toMatchObject({ kind: 'skip', reason: 'subtype' });
    expect(classifyEvent({ ...base, thread_ts: '1.0', subtype: 'channel_join' }, 'T1', BOT)).toMatchObject({ kind: 'skip', reason: 'subtype' });
    expect(classifyEvent({ ...base, channel_type: 'im', subtype: 'file_share' }, 'T1', BOT).kind).toBe('forward');
  });
});
