import type { Clock } from '../../basics/clock.js';
import type { Logger } from '../../basics/log.js';
import { formatInZone } from '../reminders/parse-due-time.js';
import type { DueJob, DueSource } from '../timers/due-timer.js';
import type { Conversation, Speaker } from '../../basics/types.js';
import type { ClaimRules } from './schedule-claim.js';
import type { ClaimedRun, RunOutcome, ScheduleRecord } from './schedule-record.js';
import { hasSeconds } from './schedule-spec.js';
import type { ScheduleStore } from './schedule-store.js';
import * as say from './schedule-text.js';

/**
 * Scheduled tasks as a source of the due timer: claims each due time once (schedule-claim.ts),
 * then runs it as a fresh turn of the task as its creator, in the schedule's own session, posted
 * where the schedule was made. A run keeps renewing its claim while it goes on; a claim that
 * stops being renewed belonged to a process that died mid-run, and that run is reported as
 * interrupted (never re-run: it may already have done part of its work).
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
  /** A run not renewed for this long died with its process; default 2 min (renewed every third of it). */
  leaseMs?: number;
  /** When this process started: due times before it fell while the bot was down. */
  startedAt: number;
}

const keyOf = (id: string) => `schedule:${id}`;

export function createScheduleSource(opts: ScheduleRunsOptions): DueSource {
  const { schedules, clock, log } = opts;
  const leaseMs = opts.leaseMs ?? 120_000;
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

  function runJob(r: ScheduleRecord, run: ClaimedRun): DueJob {
    return {
      key: keyOf(r.id),
      async run() {
        let stopHeartbeat = () => {};
        const beat = () => {
          stopHeartbeat = clock.setTimer(() => {
            schedules.renew(r.id, run.runId).catch((error: Error) => log.warn({ scheduleId: r.id, err: error.message }, 'renewing a scheduled run failed'));
            beat();
          }, Math.max(1, Math.floor(leaseMs / 3)));
        };
        beat();
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
          stopHeartbeat();
          if (outcome !== 'interrupted') await schedules.endRun(r.id, run.runId, outcome);
        }
      },
    };
  }

  const noticeJob = (r: ScheduleRecord, key: string, text: string): DueJob => ({ key, run: () => notify(r, text) });

  return {
    kind: 'schedule',
    nextDueAt: () => schedules.nextDueAt(),

    async claim(now, limit, busy) {
      const jobs: DueJob[] = [];
      for (const r of await schedules.deadRuns(now, leaseMs, limit)) {
        if (busy(keyOf(r.id)) || !r.run) continue;
        const ended = await schedules.endRun(r.id, r.run.runId, 'interrupted', r.run.renewedAt);
        if (!ended) continue;
        log.warn({ scheduleId: r.id, dueAt: r.run.dueAt }, 'a scheduled run was claimed but never finished (the bot stopped mid-run); reporting it as interrupted');
        jobs.push(noticeJob(r, `${keyOf(r.id)}:interrupted`, say.runInterrupted(r.name, timeText(r, r.run.dueAt))));
      }
      const room = limit - jobs.length;
      if (room <= 0) return { jobs, more: true };
      const due = await schedules.due(now, room);
      for (const r of due) {
        if (r.nextDueAt === undefined) continue;
        const going = busy(keyOf(r.id)) || (r.run !== undefined && now - r.run.renewedAt <= leaseMs) || (await opts.waitingForApproval(r));
        const decision = await schedules.claim(r.id, r.nextDueAt, now, going, rules);
        if (!decision) continue;
        if (decision.kind === 'run') jobs.push(runJob(decision.record, decision.run));
        else {
          log.info({ scheduleId: r.id, why: decision.why, count: decision.count }, 'scheduled due times skipped');
          if (decision.record.status !== 'active' || decision.record.nextDueAt === undefined) {
            jobs.push(noticeJob(r, `${keyOf(r.id)}:missed`, say.onceMissed(r.name, timeText(r, decision.dueAt), decision.why)));
          }
        }
      }
      return { jobs, more: due.length >= room };
    },
  };
}
