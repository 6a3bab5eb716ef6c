import type { Conversation, Speaker } from '../../basics/types.js';

/**
 * A reminder's life: scheduled → firing (its work row's runner took it) → fired | failed;
 * scheduled → cancelled. `unknown` is kept for records whose outcome cannot be established; this
 * version never writes it (a crash mid-delivery is redelivered with a "may be a repeat" marker
 * instead, see reminder-delivery.ts) but readers must accept it.
 */
export type ReminderStatus = 'scheduled' | 'firing' | 'fired' | 'cancelled' | 'failed' | 'unknown';

export interface Reminder {
  /** Short and readable, so the user or model can say "cancel k7m2qp". */
  id: string;
  /** speakerKey(speaker): the only key list/cancel match on. */
  ownerKey: string;
  speaker: Speaker;
  /** Where it was created, and so where it is posted. */
  conversation: Conversation;
  /** Platform message id the post should reference (Discord reply / Slack thread parent). */
  replyTo?: string;
  text: string;
  dueAt: number;
  createdAt: number;
  status: ReminderStatus;
  firedAt?: number;
  late?: boolean;
  cancelledAt?: number;
  /** When a runner took it (scheduled → firing), or took it over after a runner died. */
  claimedAt?: number;
  /** Delivery attempts so far. */
  attempts?: number;
  /** Set when an orphaned claim is taken over: the first delivery may already have been posted. */
  maybeRepeat?: boolean;
  /** Last delivery error, for operators (never shown to the model). */
  lastError?: string;
}

export const LIMITS = {
  maxScheduledPerUser: 100,
  maxTextChars: 1_000,
  maxAheadMs: 365 * 24 * 60 * 60 * 1000,
} as const;

/** Thrown by UserReminders.create when a limit or rule is broken; the message is for the model. */
export class ReminderInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReminderInputError';
  }
}
