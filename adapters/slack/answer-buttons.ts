/**
 * The buttons on an answer: `Stop` while it is being written, thumbs up / down (Slack's own
 * `feedback_buttons` element in a `context_actions` block) once it is final. Each button carries
 * what the gateway needs back — the turn id, and for Stop the requester (who else may stop a turn
 * that runs on another instance is decided from it) — so a click needs no lookup here.
 */
import type { ActionsBlock, ContextActionsBlock, KnownBlock } from '@slack/types';
import type { AnswerStreamOptions, Vote } from '../../src/basics/ports.js';
import type { MessageRole } from '../../src/gateway/edited-answer.js';

export const STOP_ACTION = 'hermes_stop';
export const FEEDBACK_ACTION = 'hermes_feedback';

const SEP = '|';

export function stopBlocks(turnId: string, requesterId: string): ActionsBlock[] {
  return [
    {
      type: 'actions',
      block_id: `hermes_stop_${turnId}`,
      elements: [{ type: 'button', action_id: STOP_ACTION, style: 'danger', text: { type: 'plain_text', text: 'Stop' }, value: `${turnId}${SEP}${requesterId}`, accessibility_label: 'Stop this task' }],
    },
  ];
}

export function feedbackBlocks(turnId: string): ContextActionsBlock[] {
  return [
    {
      type: 'context_actions',
      block_id: `hermes_feedback_${turnId}`,
      elements: [
        {
          type: 'feedback_buttons',
          action_id: FEEDBACK_ACTION,
          positive_button: { text: { type: 'plain_text', text: '👍' }, value: `up${SEP}${turnId}`, accessibility_label: 'This answer was helpful' },
          negative_button: { text: { type: 'plain_text', text: '👎' }, value: `down${SEP}${turnId}`, accessibility_label: 'This answer was not helpful' },
        },
      ],
    },
  ];
}

/** Buttons for a message of an answer in its role; none without a turn id (nothing to send back). */
export function answerBlocks(role: MessageRole, opts: AnswerStreamOptions): KnownBlock[] | undefined {
  if (!opts.turnId) return undefined;
  if (role === 'live' && opts.recipientId) return stopBlocks(opts.turnId, opts.recipientId);
  if (role === 'final') return feedbackBlocks(opts.turnId);
  return undefined;
}

export function parseStopValue(value: string | undefined): { turnId: string; requesterId: string } | undefined {
  const [turnId, requesterId, ...rest] = (value ?? '').split(SEP);
  if (!turnId || !requesterId || rest.length) return undefined;
  return { turnId, requesterId };
}

export function parseFeedbackValue(value: string | undefined): { vote: Vote; turnId: string } | undefined {
  const [vote, turnId, ...rest] = (value ?? '').split(SEP);
  if ((vote !== 'up' && vote !== 'down') || !turnId || rest.length) return undefined;
  return { vote, turnId };
}
