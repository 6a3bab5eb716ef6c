/**
 * The gateway's way out to Slack: answers, approval prompts, their resolution, and progress.
 *
 * Answers go into `conversation.threadId` (for a channel mention that is the mention's own ts, so
 * the reply is threaded under it; DMs are threaded only when the user wrote in a thread). Parts of
 * a long answer are posted one after another, so they arrive in order. Progress is a reaction on
 * the user's message; its removal never throws, because it runs in the gateway's `finally`.
 */
import type { webApi } from '@slack/bolt';
import type { ApprovalResolution, ConversationReader, MessageRef, OutboundPort } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';
import type { Conversation } from '../../src/basics/types.js';
import { approvalBlocks, approvalFallbackText, resolvedBlocks } from './approval-blocks.js';
import { chunkMrkdwn } from './chunk.js';
import { renderMrkdwn } from './render-mrkdwn.js';
import { describeSlackError, honouringRateLimits, type Sleep } from './slack-calls.js';
import { createSlackFiles } from './slack-files.js';
import { createSlackAnswer, withText, type SlackBlocksFor } from './slack-answer-stream.js';
import { answerBlocks, feedbackBlocks } from './answer-buttons.js';
import { systemClock, type Clock } from '../../src/basics/clock.js';
import { WORKING_STATUS, type AssistantThreads } from './assistant-threads.js';
import { requestsFirst } from '../../src/basics/requests-first.js';

export const WORKING_REACTION = 'hourglass_flowing_sand';
/** On a message the running turn took in (steering): it was seen, and the answer under way covers it. */
export const SEEN_REACTION = 'eyes';

export function slackMention(userId: string): string {
  return `<@${userId}>`;
}

export interface SlackPortDeps {
  client: webApi.WebClient;
  log: Logger;
  sleep?: Sleep;
  reader?: ConversationReader;
  botToken?: string;
  apiUrl?: string;
  /** Paces the answer being written (batched appends, throttled edits). */
  clock?: Clock;
  /** Buttons on the answer's messages; default answer-buttons.ts (Stop while it is written, feedback on the final one). */
  blocksFor?: SlackBlocksFor;
  /** Assistant threads show Slack's status line while a turn works, instead of the reaction. */
  assistant?: AssistantThreads;
  /** How often a working turn sets its assistant thread status again (Slack drops it after 2 minutes without a message). */
  statusRenewMs?: number;
}

/** Under Slack's two-minute timeout of an assistant thread status that no message followed. */
export const STATUS_RENEW_MS = 90_000;

export function createSlackPort(deps: SlackPortDeps): OutboundPort {
  const { client, log } = deps;
  // A Web API call is built and sent after the requests already read are acknowledged (requests-first.ts).
  const call = async <T>(fn: () => Promise<T>) => {
    await requestsFirst();
    return honouringRateLimits(fn, deps.sleep);
  };
  const blocksFor: SlackBlocksFor = deps.blocksFor ?? ((role, _text, opts) => answerBlocks(role, opts));
  const files = createSlackFiles({ client, botToken: deps.botToken ?? '', apiUrl: deps.apiUrl, sleep: deps.sleep });

  return {
    platform: 'slack',
    mention: slackMention,
    ...(deps.reader && { reader: deps.reader }),
    fetchAttachment: files.fetchAttachment,
    openAnswer: (conversation, opts) =>
      createSlackAnswer({ client, log, clock: deps.clock ?? systemClock, ...(deps.sleep && { sleep: deps.sleep }), blocksFor }, conversation, opts),
    sendFile: (conversation, file) => files.sendFile(conversation, { ...file, ...(file.comment && { comment: renderMrkdwn(file.comment) }) }),

    async sendText(conversation, markdown, opts) {
      const parts = chunkMrkdwn(renderMrkdwn(markdown));
      for (const [i, text] of parts.entries()) {
        // A turn's final answer: its last message carries the feedback buttons.
        const blocks = opts?.feedbackFor !== undefined && i === parts.length - 1 ? withText(text, feedbackBlocks(opts.feedbackFor)) : undefined;
        await call(() =>
          client.chat.postMessage({
            channel: conversation.channelId,
            thread_ts: conversation.threadId,
            text,
            mrkdwn: true,
            unfurl_links: false,
            unfurl_media: false,
            ...(blocks && { blocks }),
          }),
        );
      }
    },

    // Ephemeral: only that user sees it, where they wrote. A top-level mention's "thread" is the
    // mention itself and does not exist yet, so the note goes to the channel, not into it.
    async sendPrivate(conversation, userId, markdown, opts) {
      const threadTs = conversation.threadId !== opts?.replyTo ? conversation.threadId : undefined;
      for (const text of chunkMrkdwn(renderMrkdwn(markdown))) {
        await call(() => client.chat.postEphemeral({ channel: conversation.channelId, user: userId, text, thread_ts: threadTs }));
      }
      return true;
    },

    async showApproval(conversation, view) {
      const res = await call(() =>
        client.chat.postMessage({
          channel: conversation.channelId,
          thread_ts: conversation.threadId,
          text: approvalFallbackText(view),
          blocks: approvalBlocks(view, slackMention(view.requester.userId)),
          unfurl_links: false,
          unfurl_media: false,
        }),
      );
      if (!res.ts) throw new Error('Slack accepted the approval prompt but returned no ts');
      return formatRef(res.channel ?? conversation.channelId, res.ts);
    },

    async resolveApproval(conversation, ref, view, resolution) {
      const { channel, ts } = parseRef(ref, conversation);
      await call(() =>
        client.chat.update({
          channel,
          ts,
          text: `${approvalFallbackText(view)}: ${plainOutcome(resolution)}`,
          blocks: resolvedBlocks(view, resolution, slackMention),
        }),
      );
    },

    // What sub-agents are doing, as a message in the thread the answer goes to (a reaction cannot say it).
    statusMessages: {
      async post(conversation, note) {
        const res = await call(() =>
          client.chat.postMessage({ channel: conversation.channelId, thread_ts: conversation.threadId, text: statusText(note), mrkdwn: true, unfurl_links: false, unfurl_media: false }),
        );
        if (!res.ts) throw new Error('Slack accepted the status message but returned no ts');
        return formatRef(res.channel ?? conversation.channelId, res.ts);
      },
      async edit(conversation, ref, note) {
        const { channel, ts } = parseRef(ref, conversation);
        await call(() => client.chat.update({ channel, ts, text: statusText(note) }));
      },
      async remove(conversation, ref) {
        const { channel, ts } = parseRef(ref, conversation);
        await call(() => client.chat.delete({ channel, ts }));
      },
    },

    async markSeen(conversation, messageId) {
      await call(() => client.reactions.add({ channel: conversation.channelId, timestamp: messageId, name: SEEN_REACTION }));
    },

    async startWorking(conversation, opts) {
      const assistant = deps.assistant;
      if (assistant && (await assistant.isAssistantThread(conversation))) return showStatus(assistant, conversation, log, deps.clock ?? systemClock, deps.statusRenewMs ?? STATUS_RENEW_MS);
      const timestamp = opts?.replyTo;
      if (!timestamp) return async () => undefined;
      const channel = conversation.channelId;
      try {
        await call(() => client.reactions.add({ channel, timestamp, name: WORKING_REACTION }));
      } catch (err) {
        // Progress is a courtesy: a missing reactions:write scope must not stop the answer.
        log.warn({ err: describeSlackError(err), channel }, 'slack: could not add the working reaction');
        return async () => undefined;
      }
      let stopped = false;
      return async () => {
        if (stopped) return;
        stopped = true;
        try {
          await call(() => client.reactions.remove({ channel, timestamp, name: WORKING_REACTION }));
        } catch (err) {
          log.warn({ err: describeSlackError(err), channel }, 'slack: could not remove the working reaction');
        }
      };
    },
  };
}

/**
 * Slack's status line under an assistant thread while the turn works; cleared at its end (Slack
 * also clears it when the answer is posted). Slack drops a status that no message followed within
 * two minutes, so a long turn sets it again every `renewMs` until it ends.
 */
async function showStatus(assistant: AssistantThreads, conversation: Conversation, log: Logger, clock: Clock, renewMs: number): Promise<() => Promise<void>> {
  try {
    await assistant.setStatus(conversation, WORKING_STATUS);
  } catch (err) {
    log.warn({ err: describeSlackError(err), channel: conversation.channelId }, 'slack: could not set the assistant thread status (does the app have assistant:write?)');
    return async () => undefined;
  }
  let cleared = false;
  let cancel: (() => void) | undefined;
  const renew = (): void => {
    cancel = clock.setTimer(() => {
      if (cleared) return;
      assistant
        .setStatus(conversation, WORKING_STATUS)
        .catch((err: unknown) => log.warn({ err: describeSlackError(err), channel: conversation.channelId }, 'slack: could not renew the assistant thread status'))
        .finally(() => {
          if (!cleared) renew();
        });
    }, renewMs);
  };
  renew();
  return async () => {
    if (cleared) return;
    cleared = true;
    cancel?.();
    await assistant.setStatus(conversation, '').catch((err: unknown) => log.warn({ err: describeSlackError(err), channel: conversation.channelId }, 'slack: could not clear the assistant thread status'));
  };
}

/** A status note as its message reads: the working reaction's emoji, then the note. */
export function statusText(note: string): string {
  return `:${WORKING_REACTION}: ${renderMrkdwn(note)}`;
}

function plainOutcome(r: ApprovalResolution): string {
  return r.decidedBy ? `${r.outcome} by <@${r.decidedBy.userId}>` : r.outcome;
}

/** Refs are `channel/ts`: the two things chat.update needs, stable across restarts. */
export function formatRef(channel: string, ts: string): MessageRef {
  return `${channel}/${ts}`;
}

export function parseRef(ref: MessageRef, fallback: Conversation): { channel: string; ts: string } {
  const slash = ref.indexOf('/');
  if (slash < 0) return { channel: fallback.channelId, ts: ref };
  return { channel: ref.slice(0, slash), ts: ref.slice(slash + 1) };
}
