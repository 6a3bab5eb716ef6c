/**
 * Events API → gateway. Bolt acknowledges an event before any listener runs (HTTP receiver with
 * processBeforeResponse off, and Socket Mode alike), so nothing here can delay the 3-second ack;
 * the gateway's handleMessage only queues, and the turn runs after it returns.
 */
import type { App } from '@slack/bolt';
import { settlesReceipt, type GatewayApi } from '../../src/basics/ports.js';
import type { Conversation } from '../../src/basics/types.js';
import type { Logger } from '../../src/basics/log.js';
import type { EventDedupe } from './event-dedupe.js';
import { classifyEvent, type SlackMessageLike } from './inbound-event.js';
import { cleanInboundText, mentionedUserIds } from './inbound-text.js';
import type { UserNames } from './user-names.js';
import { requestsFirst } from '../../src/basics/requests-first.js';
import { createKeyedLine, type KeyedLine } from '../../src/basics/keyed-line.js';
import { conversationKey } from '../../src/basics/types.js';

export interface InboundDeps {
  gateway: GatewayApi;
  dedupe: EventDedupe;
  names: UserNames;
  log: Logger;
  botUserId: string;
  botId?: string;
  teamId: string;
  /** A message the gateway took for a turn: an assistant thread's first request titles it. */
  onQueued?(conversation: Conversation, text: string): Promise<void>;
  /**
   * Per conversation (thread, DM), its events are handed to the gateway one after the other, in
   * the order they arrived; registerInbound makes one (LINE_WAIT_MS) when none is given.
   */
  line?: KeyedLine;
}

/**
 * Longest an event waits for the one before it in its conversation: a handover that hangs (a
 * stalled store) holds the conversation's later messages this long at most, then they go on.
 */
export const LINE_WAIT_MS = 10_000;

/**
 * Slack delivers a thread's events concurrently (one HTTP request or Socket Mode envelope each,
 * acknowledged before the listener runs), so without a line the later message's accept could
 * commit first and, on a lone instance (no settling), its turn be claimed and answered before the
 * earlier message was accepted at all. In the line, each is accepted (its work row committed)
 * before the conversation's next event is looked at. Events that arrive out of posting order
 * (a retry of one whose first delivery failed) are accepted as they come; the work queue still runs
 * the rows it has in `ts` order.
 */
export function inboundLine(log: Logger, waitMs = LINE_WAIT_MS): KeyedLine {
  return createKeyedLine({
    waitMs,
    onLate: (conversation, what, waitedMs) => log.warn({ conversation, what, waitedMs }, 'slack: the conversation\'s previous event is still being handled; going on without waiting for it'),
  });
}

export function registerInbound(app: App, deps: InboundDeps): void {
  if (!deps.line) deps = { ...deps, line: inboundLine(deps.log) };
  app.event('app_mention', async ({ event, body }) => {
    await onEvent(deps, event, body.event_id);
  });
  app.event('message', async ({ event, body }) => {
    // Every message subtype shares the listener; classifyEvent drops edits, joins, bots and the like.
    await onEvent(deps, event as SlackMessageLike, body.event_id);
  });
}

/**
 * True when onEvent would skip this Events API body without a store call or any other effect
 * (a top-level channel mention's message.channels twin, bots, joins and the like): the durable
 * app does not journal such a delivery.
 */
export function skippedOnArrival(body: Record<string, unknown>, teamId: string, botUserId: string, botId?: string): boolean {
  if (body.type !== 'event_callback') return false;
  const event = body.event as SlackMessageLike | undefined;
  if (!event || typeof event !== 'object' || (event.type !== 'message' && event.type !== 'app_mention') || typeof event.channel !== 'string') return false;
  try {
    return !isRevision(event) && classifyEvent(event, teamId, botUserId, botId).kind === 'skip';
  } catch {
    // A body too odd to judge is journaled like any other.
    return false;
  }
}

export async function onEvent(deps: InboundDeps, event: SlackMessageLike, eventId: string | undefined): Promise<void> {
  const { log } = deps;
  try {
    // Skipping is decided from the event alone, so a redelivered skip is skipped again: it needs
    // no dedupe read or mark (the twin message.channels event of every channel mention is one).
    const verdict = isRevision(event) ? undefined : classifyEvent(event, deps.teamId, deps.botUserId, deps.botId);
    if (verdict?.kind === 'skip') {
      log.debug({ eventId, reason: verdict.reason }, 'slack: event skipped');
      return;
    }
    const key = lineKeyOf(deps, event, verdict);
    const handOver = () => handOverEvent(deps, event, eventId, verdict);
    const queued = deps.line && key !== undefined ? await deps.line.run(key, verdict ? 'message' : 'revision', handOver) : await handOver();
    // A Web API call: after the line, so the conversation's next message does not wait for it.
    if (queued) await deps.onQueued?.(queued.conversation, queued.text);
  } catch (err) {
    // Not marked as handled, so a redelivery of this event (Slack retry, replay) gets another chance.
    log.error({ err, eventId }, 'slack: could not hand the message to the gateway');
  }
}

/** The conversation an event belongs to (its line), when it is one the gateway may act on. */
function lineKeyOf(deps: InboundDeps, event: SlackMessageLike, verdict: ReturnType<typeof classifyEvent> | undefined): string | undefined {
  if (verdict?.kind === 'forward') return conversationKey(verdict.message.conversation);
  const revised = revisedConversation(deps, event);
  return revised && conversationKey(revised);
}

/**
 * Dedupe, then the message to the gateway (or the revision to the noted context), then the mark.
 * Resolves with the message when the gateway queued it for a turn.
 */
async function handOverEvent(deps: InboundDeps, event: SlackMessageLike, eventId: string | undefined, verdict: ReturnType<typeof classifyEvent> | undefined): Promise<{ conversation: Conversation; text: string } | undefined> {
  const { gateway, dedupe, names, log } = deps;
  // The request is acknowledged already; requests read since then are acknowledged before this
  // message's store calls and hand-over run (requests-first.ts).
  await requestsFirst();
  if (eventId && (await dedupe.seen(eventId))) {
    log.debug({ eventId }, 'slack: event already handled');
    return undefined;
  }
  if (!verdict || verdict.kind !== 'forward') {
    await revision(deps, event);
    if (eventId) await dedupe.markHandled(eventId);
    return undefined;
  }
  const { message, rawText } = verdict;
  await names.prefetch([message.speaker.userId, ...mentionedUserIds(rawText, deps.botUserId)]);
  const text = cleanInboundText(rawText, deps.botUserId, names.nameOf);
  const displayName = message.speaker.displayName ?? names.nameOf(message.speaker.userId);
  const receipt = eventId === undefined ? undefined : dedupe.receiptOf(eventId);
  const result = await gateway.handleMessage({
    ...message,
    text,
    speaker: displayName ? { ...message.speaker, displayName } : message.speaker,
    ...(receipt !== undefined && { receipt }),
  });
  if (eventId) await dedupe.markHandled(eventId, receipt !== undefined && settlesReceipt(result));
  log.debug({ eventId, id: message.id, result }, 'slack: message handed to the gateway');
  return result === 'queued' ? { conversation: message.conversation, text } : undefined;
}

const isRevision = (ev: SlackMessageLike) => ev.subtype === 'message_changed' || ev.subtype === 'message_deleted';

/**
 * An edit or deletion of a thread message: if the gateway noted it as context (talk between
 * others in a joined thread), it keeps the latest text or drops it.
 */
async function revision(deps: InboundDeps, ev: SlackMessageLike): Promise<void> {
  const conversation = revisedConversation(deps, ev);
  const ts = ev.subtype === 'message_changed' ? ev.message?.ts : (ev.deleted_ts ?? ev.previous_message?.ts);
  if (!conversation || !ts || !deps.gateway.reviseContext) return;
  const text = ev.subtype === 'message_changed' ? cleanInboundText(ev.message?.text ?? '', deps.botUserId, deps.names.nameOf) : null;
  await deps.gateway.reviseContext(conversation, `${ev.channel}:${ts}`, text);
}

/** The thread of an edited or deleted thread reply; undefined for anything else (nothing to revise). */
function revisedConversation(deps: InboundDeps, ev: SlackMessageLike): Conversation | undefined {
  if (!isRevision(ev)) return undefined;
  const msg = ev.subtype === 'message_changed' ? ev.message : ev.previous_message;
  const ts = ev.subtype === 'message_changed' ? ev.message?.ts : (ev.deleted_ts ?? ev.previous_message?.ts);
  if (!msg?.thread_ts || !ts || msg.thread_ts === ts) return undefined;
  return { platform: 'slack', workspaceId: deps.teamId, channelId: ev.channel, threadId: msg.thread_ts, isDm: false };
}
