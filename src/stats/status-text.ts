import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import type { ModelProvider } from '../provider/provider.js';
import type { ApprovalStore } from '../approvals/approval-store.js';
import type { ReminderStore } from '../reminders/reminder-store.js';
import type { Speaker } from '../types.js';
import { speakerKey } from '../types.js';
import { readTraceStats, formatStats } from './trace-stats.js';

/**
 * `/hermes status`: everyone sees the model and their own usage over the last 24 hours;
 * admins see the whole deployment (queue, open approvals, all usage).
 */
export function createStatusReporter(deps: { config: Config; tracesDir: string; flushTraces: () => Promise<void>; provider: ModelProvider; approvals: ApprovalStore; reminders: ReminderStore; clock: Clock }) {
  const startedAt = deps.clock.now();
  return {
    async text(speaker: Speaker, isAdmin: boolean, queueSize: number): Promise<string> {
      const now = deps.clock.now();
      const since = now - 24 * 3600_000;
      const uptimeMin = Math.floor((now - startedAt) / 60_000);
      const lines = [`Model: ${deps.provider.model} · up ${uptimeMin >= 60 ? `${Math.floor(uptimeMin / 60)} h ${uptimeMin % 60} min` : `${uptimeMin} min`}`];
      await deps.flushTraces();
      const stats = await readTraceStats(deps.tracesDir, { since, until: now, userKey: isAdmin ? undefined : speakerKey(speaker) });
      if (isAdmin) {
        const open = await deps.approvals.listOpen();
        lines.push(`Turns queued or running: ${queueSize} · open approvals: ${open.length}`);
        lines.push('Whole deployment, last 24 h:');
      } else {
        lines.push('Your usage, last 24 h:');
      }
      lines.push(...formatStats(stats, { compact: true }));
      return lines.join('\n');
    },
  };
}
