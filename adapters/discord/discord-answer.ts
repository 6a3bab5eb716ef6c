import type { REST } from 'discord.js';
import { Routes, type APIActionRowComponent, type APIComponentInMessageActionRow, type APIMessage } from 'discord-api-types/v10';
import type { Clock } from '../../src/basics/clock.js';
import type { Logger } from '../../src/basics/log.js';
import type { Conversation } from '../../src/basics/types.js';
import { createEditedAnswer, type MessageRole } from '../../src/gateway/edited-answer.js';
import type { AnswerStream, AnswerStreamOptions } from '../../src/basics/ports.js';
import { splitMessage } from './chunk.js';
import { allowedMentions, statusText, textMessage } from './render.js';

/**
 * An answer shown in Discord while it is written: one reply to the user's message, edited at most
 * every DISCORD_EDIT_MS (Discord allows about five edits per five seconds per channel, shared with
 * everything else the bot posts there), continued in further messages past 2,000 characters.
 */
export const DISCORD_EDIT_MS = 1500;

/** Buttons a message carries in each role (Stop while written, feedback when final). */
export type DiscordComponentsFor = (role: MessageRole, opts: AnswerStreamOptions) => Array<APIActionRowComponent<APIComponentInMessageActionRow>> | undefined;

export function createDiscordAnswer(
  deps: { rest: REST; clock: Clock; log: Logger; componentsFor?: DiscordComponentsFor },
  conversation: Conversation,
  opts: AnswerStreamOptions,
): AnswerStream {
  const { rest } = deps;
  let first = true;
  return createEditedAnswer<string>(
    {
      async post(text, role) {
        // Only the first message replies to the user's; later parts follow it in the channel.
        const body = { ...textMessage(text, first ? opts.replyTo : undefined), components: deps.componentsFor?.(role, opts) ?? [] };
        first = false;
        const message = (await rest.post(Routes.channelMessages(conversation.channelId), { body })) as APIMessage;
        return message.id;
      },
      async edit(id, text, role) {
        await rest.patch(Routes.channelMessage(conversation.channelId, id), {
          body: { content: text, allowed_mentions: allowedMentions(false), components: deps.componentsFor?.(role, opts) ?? [] },
        });
      },
      async remove(id) {
        await rest.delete(Routes.channelMessage(conversation.channelId, id));
      },
    },
    {
      split: (markdown) => splitMessage(markdown),
      progressLine: (note) => `-# ${statusText(note)}`,
      intervalMs: DISCORD_EDIT_MS,
      clock: deps.clock,
      log: deps.log,
    },
  );
}
