import type { Conversation, Speaker } from '../../basics/types.js';
import type { ScheduleSpec } from './schedule-spec.js';

/**
 * A scheduled task's life: active → finished (a single run done) | cancelled (by its creator) |
 * stopped (its creator may no longer use the bot). Only `active` schedules are due.
 */
export type ScheduleStatus = 'active' | 'finished' | 'cancelled' | 'stopped';

/** A run in progress, claimed by one process for one due time. */
export interface ClaimedRun {
  /** `<scheduleId>@<dueAt>`: unique per due time; the run's user message carries it. */
  runId: string;
  dueAt: number;
  claimedAt: number;
  /** Round-2 records renewed this while the run went on; kept equal to claimedAt (the work row's lease replaces it). */
  renewedAt: number;
  late: boolean;
  /** Due times skipped since the previous run (mentioned in this run's post). */
  skipped: SkippedRuns;
}

export interface SkippedRuns {
  /** Missed while the bot was not running (or more than the grace period late). */
  down: number;
  /** Skipped because the previous run was still going. */
  busy: number;
}

export interface ScheduleRecord {
  /** Short and readable, so the user or model can say "cancel s7m2qp". */
  id: string;
  /** speakerKey(speaker): list, cancel and the per-user limit match on it. */
  ownerKey: string;
  /** The creator: each run is a turn as this person (their facts, their approvals). */
  speaker: Speaker;
  /** Where it was created, and so where every run is posted. */
  conversation: Conversation;
  replyTo?: string;
  name: string;
  task: string;
  /** The schedule as the model wrote it, and as understood. */
  schedule: string;
  spec: ScheduleSpec;
  timezone: string;
  createdAt: number;
  status: ScheduleStatus;
  /** The next due time nobody has claimed yet; absent once nothing is left to run. */
  nextDueAt?: number;
  run?: ClaimedRun;
  /** Skipped due times not yet mentioned in a post. */
  skipped: SkippedRuns;
  runs: number;
  lastRun?: { dueAt: number; endedAt: number; outcome: RunOutcome };
  endedAt?: number;
  /** Why it was stopped (status stopped), for the list. */
  stoppedWhy?: string;
}

/** How one run ended, as kept on the record. */
export type RunOutcome = 'answered' | 'waiting_for_approval' | 'failed' | 'stopped' | 'interrupted' | 'not_allowed';

/** The session a schedule's runs share (its own, apart from the conversation's). */
export const scheduleSessionKey = (id: string) => `schedule:${id}`;

export const NO_SKIPS: SkippedRuns = { down: 0, busy: 0 };

/** Thrown by UserSchedules.create when a rule is broken; the message is for the model. */
export class ScheduleInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScheduleInputError';
  }
}

export const SCHEDULE_LIMITS = {
  maxTaskChars: 2_000,
  maxNameChars: 80,
} as const;
