/**
 * The buttons on an answer in Discord: `Stop` on the message being written, 👍 / 👎 on the final
 * one. A custom_id holds at most 100 characters: `hermes:stop:<turn>:<requester>` and
 * `hermes:fb:<up|down>:<turn>` fit (a turn id is a 36-character UUID, a user id ≤ 20 digits).
 */
import { ButtonStyle, ComponentType, type APIActionRowComponent, type APIComponentInMessageActionRow } from 'discord-api-types/v10';
import type { AnswerStreamOptions, Vote } from '../../src/basics/ports.js';
import type { MessageRole } from '../../src/gateway/edited-answer.js';

type Row = APIActionRowComponent<APIComponentInMessageActionRow>;

const STOP_PREFIX = 'hermes:stop:';
const FEEDBACK_PREFIX = 'hermes:fb:';

export function stopRow(turnId: string, requesterId: string): Row {
  return { type: ComponentType.ActionRow, components: [{ type: ComponentType.Button, style: ButtonStyle.Danger, label: 'Stop', custom_id: `${STOP_PREFIX}${turnId}:${requesterId}` }] };
}

export function feedbackRow(turnId: string): Row {
  return {
    type: ComponentType.ActionRow,
    components: [
      { type: ComponentType.Button, style: ButtonStyle.Secondary, emoji: { name: '👍' }, custom_id: `${FEEDBACK_PREFIX}up:${turnId}` },
      { type: ComponentType.Button, style: ButtonStyle.Secondary, emoji: { name: '👎' }, custom_id: `${FEEDBACK_PREFIX}down:${turnId}` },
    ],
  };
}

/** Buttons for a message of an answer in its role; none without a turn id. */
export function answerComponents(role: MessageRole, opts: AnswerStreamOptions): Row[] | undefined {
  if (!opts.turnId) return undefined;
  if (role === 'live' && opts.recipientId) return [stopRow(opts.turnId, opts.recipientId)];
  if (role === 'final') return [feedbackRow(opts.turnId)];
  return undefined;
}

export function parseStopCustomId(id: string): { turnId: string; requesterId: string } | undefined {
  if (!id.startsWith(STOP_PREFIX)) return undefined;
  const [turnId, requesterId, ...rest] = id.slice(STOP_PREFIX.length).split(':');
  return turnId && requesterId && rest.length === 0 ? { turnId, requesterId } : undefined;
}

export function parseFeedbackCustomId(id: string): { vote: Vote; turnId: string } | undefined {
  if (!id.startsWith(FEEDBACK_PREFIX)) return undefined;
  const [vote, turnId, ...rest] = id.slice(FEEDBACK_PREFIX.length).split(':');
  return (vote === 'up' || vote === 'down') && turnId && rest.length === 0 ? { vote, turnId } : undefined;
}
