import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import { formatInZone } from '../reminders/parse-due-time.js';
import type { WorkContext } from '../cluster/work-queue.js';
import type { Conversation, Speaker } from '../../basics/types.js';
import type { ClaimRules } from './schedule-claim.js';
import type { ClaimedRun, RunOutcome, ScheduleRecord } from './schedule-record.js';
import { hasSeconds } from './schedule-spec.js';
import type { ScheduleStore } from './schedule-store.js';
import * as say from './schedule-text.js';

/**
 * A scheduled task's due time, run when the WorkQueue hands over its row (`schedule:<id>@<due>`;
 * see src/state/timers/timer-work.ts): the due time is claimed once (schedule-claim.ts decides
 * run or skip; the store writes the decision and the next due time's row in one transaction),
 * then run as a fresh turn of the task as its creator, in the schedule's own session, posted where
 * the schedule was made. The queue's lease replaces any renewal of our own: a row whose runner
 * died (kill -9, an instance whose lease ran out) is handed over again, finds its run still on the
 * record, and the run is reported as interrupted (never re-run: it may already have done part of
 * its work).
 */
export interface ScheduledRun {
  /** `<scheduleId>@<dueAt>`: unique per due time. */
  runId: string;
  scheduleId: string;
  conversation: Conversation;
  speaker: Speaker;
  replyTo?: string;
  /** What the model is asked to do. */
  text: string;
  /** The first line of every post of this run: "⏰ <name>" and any notes. */
  header: string;
}

/**
 * How a run's turn ended; `waiting_for_approval`: it paused on a gated tool; `interrupted`: the bot
 * is shutting down mid-run (the claim is left to lapse, so the restart reports it).
 */
export type ScheduledRunEnd = Extract<RunOutcome, 'answered' | 'waiting_for_approval' | 'failed' | 'stopped' | 'interrupted'>;

export interface ScheduleRunsOptions {
  schedules: ScheduleStore;
  clock: Clock;
  log: Logger;
  /** Runs the turn; resolves when it has ended or paused for an approval. */
  run(run: ScheduledRun): Promise<ScheduledRunEnd>;
  /** Posts a short notice where the schedule posts (missed run, interrupted run, stopped schedule). */
  notify(r: ScheduleRecord, text: string): Promise<void>;
  /** An approval asked for by an earlier run still waits: that run is still going. */
  waitingForApproval(r: ScheduleRecord): Promise<boolean>;
  /** Whether the creator may still use the bot at run time (HERMES_ALLOW); default yes. */
  allowed?(speaker: Speaker, conversation: Conversation): boolean | Promise<boolean>;
  /** HERMES_SCHEDULE_GRACE_S in ms. */
  graceMs: number;
  /** Later than this counts as late; default 60 s. */
  lateAfterMs?: number;
  /** When this process started: due times before it fell while the bot was down. */
  startedAt: number;
}

/** Runs the job of one schedule row; 'interrupted' when the run was cut off (the row stays for the next claim). */
export type ScheduleRunner = (job: { scheduleId: string; dueAt: number }, ctx: Pick<WorkContext, 'signal' | 'startedBefore'>) => Promise<void | 'interrupted'>;

export function createScheduleRunner(opts: ScheduleRunsOptions): ScheduleRunner {
  const { schedules, clock, log } = opts;
  const rules: ClaimRules = { graceMs: opts.graceMs, lateAfterMs: opts.lateAfterMs ?? 60_000, startedAt: opts.startedAt };

  const timeText = (r: ScheduleRecord, at: number) => {
    const iso = formatInZone(at, r.timezone);
    return `${iso.slice(0, 10)} ${iso.slice(11, hasSeconds(r.spec) ? 19 : 16)} ${r.timezone}`;
  };

  async function notify(r: ScheduleRecord, text: string): Promise<void> {
    try {
      await opts.notify(r, text);
    } catch (error) {
      log.error({ scheduleId: r.id, err: error instanceof Error ? error.message : String(error) }, 'could not post a schedule notice');
    }
  }

  async function runClaimed(r: ScheduleRecord, run: ClaimedRun): Promise<void | 'interrupted'> {
    let outcome: RunOutcome = 'failed';
    try {
      if (opts.allowed && !(await opts.allowed(r.speaker, r.conversation))) {
        outcome = 'not_allowed';
        const stopped = await schedules.stopOwner(r.ownerKey, 'the creator may no longer use the bot');
        log.warn({ scheduleId: r.id, owner: r.ownerKey, stopped }, 'schedule creator is no longer allowed; their schedules are stopped');
        await notify(r, say.creatorNotAllowed(r.name));
        return;
      }
      const header = say.runHeader(r.name, { late: run.late, dueText: timeText(r, run.dueAt), skipped: run.skipped });
      outcome = await opts.run({
        runId: run.runId, scheduleId: r.id, conversation: r.conversation, speaker: r.speaker, replyTo: r.replyTo,
        text: say.runPrompt(r, timeText(r, run.dueAt)), header,
      });
      log.info({ scheduleId: r.id, dueAt: run.dueAt, late: run.late, skipped: run.skipped, outcome }, 'scheduled run ended');
    } catch (error) {
      log.error({ scheduleId: r.id, err: error instanceof Error ? error.message : String(error) }, 'scheduled run failed to start');
      await notify(r, say.runFailed(r.name));
    } finally {
      if (outcome !== 'interrupted') await schedules.endRun(r.id, run.runId, outcome);
    }
    // Cut off (shutting down): the row stays, and the next start reports the run interrupted.
    if (outcome === 'interrupted') return 'interrupted';
  }

  return async (job, ctx) => {
    const r = await schedules.get(job.scheduleId);
    if (!r) return;
    // This due time's run is on the record and never ended: its runner died or was cut off.
    if (r.run && r.run.dueAt === job.dueAt) {
      const ended = await schedules.endRun(r.id, r.run.runId, 'interrupted');
      if (!ended) return;
      log.warn({ scheduleId: r.id, dueAt: r.run.dueAt, startedBefore: ctx.startedBefore }, 'a scheduled run was claimed but never finished (the bot stopped mid-run); reporting it as interrupted');
      await notify(r, say.runInterrupted(r.name, timeText(r, r.run.dueAt)));
      return;
    }
    // Cancelled, stopped, or moved on since this row was written.
    if (r.status !== 'active' || r.nextDueAt !== job.dueAt) return;
    const now = clock.now();
    // Still going: an earlier run that never ended, or one waiting for an approval; or the last
    // run ended after this due time came (it overran it).
    const going = r.run !== undefined || (r.lastRun !== undefined && r.lastRun.endedAt > job.dueAt) || (await opts.waitingForApproval(r));
    const decision = await schedules.claimRun(r.id, job.dueAt, now, going, rules);
    if (!decision) return;
    if (decision.kind === 'run') return runClaimed(decision.record, decision.run);
    log.info({ scheduleId: r.id, why: decision.why, count: decision.count }, 'scheduled due times skipped');
    if (decision.record.status !== 'active' || decision.record.nextDueAt === undefined) {
      await notify(r, say.onceMissed(r.name, timeText(r, decision.dueAt), decision.why));
    }
  };
}
