import type { REST } from 'discord.js';
import { Routes, type APIChannel, type APIMessage } from 'discord-api-types/v10';
import type { ApprovalResolution, ApprovalView, ConversationReader, MessageRef, OutboundPort } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';
import type { Conversation } from '../../src/basics/types.js';
import { splitMessage } from './chunk.js';
import { approvalMessages, mention, resolvedApprovalMessage, statusText, textMessage } from './render.js';
import { createDiscordFiles } from './discord-files.js';
import { answerComponents, feedbackRow } from './answer-buttons.js';
import { createDiscordAnswer, type DiscordComponentsFor } from './discord-answer.js';
import { systemClock, type Clock } from '../../src/basics/clock.js';

/**
 * The gateway's way out to Discord. It talks REST with channel ids only, never with cached channel
 * objects: after a restart (a pending approval, a reminder) the cache is empty, and a DM or a
 * thread must still be reachable. A thread is a channel, so posting to `channelId` covers both.
 * Rate limits are queued by discord.js's REST client; every request has its timeout.
 */

/** On a message the running turn took in (steering): the same emoji as Slack's `eyes`. */
export const SEEN_EMOJI = '👀';

/** Discord shows "typing…" for about 10 s per call; renewing a bit earlier keeps it steady. */
export const TYPING_RENEW_MS = 8000;
/** A turn that never calls stop (a bug) must not keep typing forever. */
const TYPING_MAX_MS = 15 * 60_000;

export interface DiscordPort extends OutboundPort {
  /** Typing loops still running (a turn that never stopped would show here). */
  activeTyping(): number;
  /** Stops every typing loop (adapter shutdown). */
  stopAll(): void;
}

/** Pacing and buttons of answers shown while they are written. */
export interface DiscordAnswerOptions {
  clock?: Clock;
  componentsFor?: DiscordComponentsFor;
}

export function createDiscordPort(rest: REST, log: Logger, typingRenewMs = TYPING_RENEW_MS, reader?: ConversationReader, apiUrl?: string, answers: DiscordAnswerOptions = {}): DiscordPort {
  const typingLoops = new Set<() => void>();
  const files = createDiscordFiles(rest, apiUrl);

  const post = async (channelId: string, body: object): Promise<APIMessage> =>
    (await rest.post(Routes.channelMessages(channelId), { body })) as APIMessage;

  return {
    platform: 'discord',
    ...(reader && { reader }),
    fetchAttachment: files.fetchAttachment,
    sendFile: files.sendFile,
    openAnswer: (conversation, opts) =>
      createDiscordAnswer({ rest, log, clock: answers.clock ?? systemClock, componentsFor: answers.componentsFor ?? answerComponents }, conversation, opts),

    async sendText(conversation: Conversation, markdown: string, opts?: { replyTo?: string; notify?: string; feedbackFor?: string }): Promise<void> {
      const parts = splitMessage(markdown);
      // Parts go one after another: Discord orders messages by arrival, and the answer must read in order.
      for (const [i, part] of parts.entries()) {
        const body = textMessage(part, i === 0 ? opts?.replyTo : undefined, i === 0 ? opts?.notify : undefined);
        // A turn's final answer: its last message carries the feedback buttons.
        await post(conversation.channelId, opts?.feedbackFor !== undefined && i === parts.length - 1 ? { ...body, components: [feedbackRow(opts.feedbackFor)] } : body);
      }
    },

    async showApproval(conversation: Conversation, view: ApprovalView, opts?: { replyTo?: string }): Promise<MessageRef> {
      // Long arguments come first, in order; the last message holds the buttons and is the one edited later.
      let message: APIMessage | undefined;
      for (const body of approvalMessages(view, opts?.replyTo)) message = await post(conversation.channelId, body);
      return `${message!.channel_id}/${message!.id}`;
    },

    async resolveApproval(conversation: Conversation, ref: MessageRef, view: ApprovalView, resolution: ApprovalResolution): Promise<void> {
      const [channelId, messageId] = ref.includes('/') ? ref.split('/') : [conversation.channelId, ref];
      await rest.patch(Routes.channelMessage(channelId!, messageId!), { body: resolvedApprovalMessage(view, resolution) });
    },

    // What sub-agents are doing, as a message of its own ("typing…" cannot say it); it pings nobody.
    statusMessages: {
      async post(conversation, note) {
        const message = await post(conversation.channelId, textMessage(statusText(note)));
        return `${message.channel_id}/${message.id}`;
      },
      async edit(conversation, ref, note) {
        const [channelId, messageId] = ref.includes('/') ? ref.split('/') : [conversation.channelId, ref];
        await rest.patch(Routes.channelMessage(channelId!, messageId!), { body: { content: statusText(note) } });
      },
      async remove(conversation, ref) {
        const [channelId, messageId] = ref.includes('/') ? ref.split('/') : [conversation.channelId, ref];
        await rest.delete(Routes.channelMessage(channelId!, messageId!));
      },
    },

    async markSeen(conversation: Conversation, messageId: string): Promise<void> {
      await rest.put(Routes.channelMessageOwnReaction(conversation.channelId, messageId, encodeURIComponent(SEEN_EMOJI)));
    },

    async startWorking(conversation: Conversation): Promise<() => Promise<void>> {
      const route = Routes.channelTyping(conversation.channelId);
      // The last indicator request still on its way: stopping waits for it, so a slow one cannot
      // reach Discord after the answer and show "typing…" for ten seconds under it.
      let inFlight: Promise<unknown> = Promise.resolve();
      const sendTyping = (): void => {
        inFlight = rest.post(route).catch((err: unknown) => log.debug({ err: String(err) }, 'discord: typing indicator failed'));
      };
      sendTyping();
      const timer = setInterval(sendTyping, typingRenewMs);
      const cap = setTimeout(() => stop(), TYPING_MAX_MS);
      timer.unref();
      cap.unref();
      const stop = (): void => {
        clearInterval(timer);
        clearTimeout(cap);
        typingLoops.delete(stop);
      };
      typingLoops.add(stop);
      // Discord has no "stop typing" call: the indicator ends with our next message or after ~10 s.
      return async () => {
        stop();
        await inFlight;
      };
    },

    async sendPrivate(_conversation: Conversation, userId: string, markdown: string): Promise<boolean> {
      // Messages outside an interaction cannot be ephemeral on Discord: private means a DM.
      // A member who closed their DMs makes this throw (50007); the caller then shows nothing.
      const dm = (await rest.post(Routes.userChannels(), { body: { recipient_id: userId } })) as APIChannel;
      for (const part of splitMessage(markdown)) await post(dm.id, textMessage(part, undefined, undefined));
      return true;
    },

    mention,

    activeTyping(): number {
      return typingLoops.size;
    },

    stopAll(): void {
      for (const stop of [...typingLoops]) stop();
    },
  };
}
