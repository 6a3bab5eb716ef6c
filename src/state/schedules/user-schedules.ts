/** A scheduled task as tools and commands see it, and the speaker-scoped view of the schedule store. */

export interface ScheduleInput {
  task: string;
  schedule: string;
  timezone?: string;
  name?: string;
}

/** A schedule understood but not saved: what the approval prompt shows. */
export interface SchedulePreview {
  name: string;
  task: string;
  schedule: string;
  timezone: string;
  /** The schedule in words, e.g. "At 09:00, Monday through Friday (Europe/Berlin)". */
  words: string;
  /** The next (up to three) run times. */
  nextRuns: number[];
  /** Runs fall on seconds, so times are shown with seconds. */
  seconds: boolean;
}

export interface ScheduleView extends SchedulePreview {
  id: string;
  status: 'active' | 'finished' | 'cancelled' | 'stopped';
  createdAt: number;
  /** A run is going on right now. */
  running: boolean;
  lastRun?: { dueAt: number; endedAt: number; outcome: string };
}

/** The speaking user's scheduled tasks, each posting into the conversation it was created in. */
export interface UserSchedules {
  /**
   * Understands a schedule without saving it; throws an error written for the model when it is not
   * valid or the user has no room for another one (so nobody is asked to approve a sure failure).
   */
  preview(input: ScheduleInput): Promise<SchedulePreview>;
  create(input: ScheduleInput): Promise<ScheduleView>;
  list(): Promise<ScheduleView[]>;
  cancel(id: string): Promise<boolean>;
}
