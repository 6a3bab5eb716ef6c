import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Receiver, ReceiverEvent } from '@slack/bolt';
import { DurableApp } from '../../adapters/slack/durable-app.js';
import { skippedOnArrival } from '../../adapters/slack/slack-inbound.js';
import type { ReceiptJournal } from '../../src/gateway/receipts.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';

/**
 * What DurableApp does with a delivery before Bolt's listeners: a body every listener skips (the
 * message.channels twin of a channel mention) is acknowledged without a receipt and without Bolt;
 * any other event is journaled before its ack and then reaches the listeners. Real Bolt App, its
 * Web API client against the fake Slack on 127.0.0.1.
 */
let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

const TEAM = 'T0TEAM';
const BOT_USER = 'UBOT';

function journal() {
  const added: string[] = [];
  const settled: string[] = [];
  const receipts: ReceiptJournal = {
    add: async (id) => {
      added.push(id);
      return false;
    },
    done: async (id) => void settled.push(`done ${id}`),
    doneAlready: async () => void settled.push('done by the gateway'),
    drop: async (id) => void settled.push(`drop ${id}`),
    pending: async () => [],
    sweep: async () => 0,
  };
  return { receipts, added, settled };
}

const receiver: Receiver = { init: () => undefined, start: () => Promise.resolve(), stop: () => Promise.resolve() };

function body(event: Record<string, unknown>, eventId: string) {
  return { type: 'event_callback', team_id: TEAM, api_app_id: 'A1', event_id: eventId, event_time: 1, authorizations: [{ team_id: TEAM, user_id: BOT_USER, is_bot: true }], event };
}

describe('DurableApp before the listeners', () => {
  it('acknowledges a skipped twin without a receipt or a listener; journals a message before its ack, then the listener runs', async () => {
    slack = await startFakeSlack();
    const { receipts, added, settled } = journal();
    const app = new DurableApp(
      { token: slack.botToken, botId: 'BBOT', botUserId: BOT_USER, receiver, logger: undefined, clientOptions: { slackApiUrl: `${slack.apiUrl.replace(/\/$/, '')}/` } },
      receipts,
      pino({ level: 'silent' }),
      (b) => skippedOnArrival(b, TEAM, BOT_USER, 'BBOT'),
    );
    const heard: string[] = [];
    app.event('message', async ({ event }) => void heard.push((event as { ts: string }).ts));
    app.event('app_mention', async ({ event }) => void heard.push(`mention ${(event as { ts: string }).ts}`));

    const log: string[] = [];
    const deliver = (b: Record<string, unknown>) => app.processEvent({ body: b as ReceiverEvent['body'], ack: async () => void log.push(`ack ${String(b.event_id)} after ${added.length} receipts`) });

    // The message.channels twin of a top-level mention: every listener would skip it.
    const twin = body({ type: 'message', channel_type: 'channel', channel: 'C1', user: 'U1', text: `<@${BOT_USER}> hi`, ts: '100.1' }, 'EvTWIN');
    expect(skippedOnArrival(twin, TEAM, BOT_USER, 'BBOT')).toBe(true);
    await deliver(twin);
    expect(log).toEqual(['ack EvTWIN after 0 receipts']);
    expect(added).toEqual([]);
    expect(heard).toEqual([]);

    // The mention itself, and a DM: journaled first, acknowledged, then heard, then settled.
    await deliver(body({ type: 'app_mention', channel: 'C1', user: 'U1', text: `<@${BOT_USER}> hi`, ts: '100.1' }, 'EvMENTION'));
    await deliver(body({ type: 'message', channel_type: 'im', channel: 'D1', user: 'U1', text: 'hello', ts: '100.2' }, 'EvDM'));
    expect(log).toEqual(['ack EvTWIN after 0 receipts', 'ack EvMENTION after 1 receipts', 'ack EvDM after 2 receipts']);
    expect(added).toEqual(['event:EvMENTION', 'event:EvDM']);
    expect(heard).toEqual(['mention 100.1', '100.2']);
    // Neither listener marked the event handled here (no gateway), so both receipts are dropped.
    expect(settled).toEqual(['drop event:EvMENTION', 'drop event:EvDM']);
  });

  it('acknowledges an event once its receipt is written, before Bolt authorizes it; a click waits for its listener\'s ack', async () => {
    slack = await startFakeSlack();
    const { receipts, added } = journal();
    const log: string[] = [];
    const app = new DurableApp(
      {
        receiver,
        logger: undefined,
        clientOptions: { slackApiUrl: `${slack.apiUrl.replace(/\/$/, '')}/` },
        authorize: async () => {
          log.push('authorize');
          return { botToken: slack!.botToken, botId: 'BBOT', botUserId: BOT_USER };
        },
      },
      receipts,
      pino({ level: 'silent' }),
    );
    app.event('app_mention', async () => void log.push('listener'));
    app.action('approve', async ({ ack }) => {
      log.push('action listener');
      await ack();
    });
    const deliver = (b: Record<string, unknown>, id: string) => app.processEvent({ body: b as ReceiverEvent['body'], ack: async () => void log.push(`ack ${id} after ${added.length} receipts`) });

    await deliver(body({ type: 'app_mention', channel: 'C1', user: 'U1', text: `<@${BOT_USER}> hi`, ts: '100.1' }, 'EvM'), 'EvM');
    expect(log).toEqual(['ack EvM after 1 receipts', 'authorize', 'listener']);

    log.length = 0;
    const click = { type: 'block_actions', team: { id: TEAM }, user: { id: 'U1' }, api_app_id: 'A1', trigger_id: 'TR1', container: { type: 'message' }, actions: [{ action_id: 'approve', block_id: 'b', type: 'button', value: 'x', action_ts: '1' }] };
    await deliver(click, 'click');
    expect(log).toEqual(['authorize', 'action listener', 'ack click after 2 receipts']);
  });
});
