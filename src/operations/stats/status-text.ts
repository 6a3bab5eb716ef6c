import type { Config } from '../../settings/config.js';
import type { Clock } from '../../basics/clock.js';
import type { ModelProvider } from '../../runtime/provider/provider.js';
import type { ApprovalStore } from '../../state/approvals/approval-store.js';
import type { ReminderStore } from '../../state/reminders/reminder-store.js';
import type { Speaker } from '../../basics/types.js';
import { speakerKey } from '../../basics/types.js';
import type { Logger } from '../../basics/log.js';
import { readTraceStats, formatStats, TracesUnreadableError } from './trace-stats.js';
import type { UsageReport } from '../../gateway/access/gatekeeper.js';
import { usageLines } from '../../gateway/user-messages.js';

/** Zeros would be a lie when the traces exist but cannot be read; admins get the error code. */
function usageUnreadable(code: string | undefined): string {
  return `Usage numbers are unavailable: the traces could not be read${code ? ` (${code}); the log has the details` : '; an admin can check the log'}.`;
}

/**
 * `/hermes status`: everyone sees the model and their own usage over the last 24 hours;
 * admins see the whole deployment (queue, open approvals, all usage).
 */
export function createStatusReporter(deps: { config: Config; tracesDir: string; flushTraces: () => Promise<void>; provider: ModelProvider; approvals: ApprovalStore; reminders: ReminderStore; clock: Clock; log: Pick<Logger, 'error'>; usage: (speaker: Speaker) => Promise<UsageReport>; extensions?: (isAdmin: boolean) => string[] }) {
  const startedAt = deps.clock.now();
  return {
    async text(speaker: Speaker, isAdmin: boolean, queueSize: number): Promise<string> {
      const now = deps.clock.now();
      const since = now - 24 * 3600_000;
      const uptimeMin = Math.floor((now - startedAt) / 60_000);
      const lines = [`Model: ${deps.provider.model} · up ${uptimeMin >= 60 ? `${Math.floor(uptimeMin / 60)} h ${uptimeMin % 60} min` : `${uptimeMin} min`}`];
      lines.push(...usageLines(await deps.usage(speaker), now));
      // MCP servers (up, down, withheld tools for admins) and skills.
      lines.push(...(deps.extensions?.(isAdmin) ?? []));
      await deps.flushTraces();
      const stats = await readTraceStats(deps.tracesDir, { since, until: now, userKey: isAdmin ? undefined : speakerKey(speaker) }).catch((err: unknown) => {
        if (!(err instanceof TracesUnreadableError)) throw err;
        deps.log.error({ err: err.message }, 'status: traces could not be read');
        return err;
      });
      if (isAdmin) {
        const open = await deps.approvals.listOpen();
        lines.push(`Turns queued or running: ${queueSize} · open approvals: ${open.length}`);
        lines.push('Whole deployment, last 24 h:');
      } else {
        lines.push('Your usage, last 24 h:');
      }
      if (stats instanceof TracesUnreadableError) lines.push(usageUnreadable(isAdmin ? stats.code : undefined));
      else lines.push(...formatStats(stats, { compact: true }));
      return lines.join('\n');
    },
  };
}
