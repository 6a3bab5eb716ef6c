import type { ScheduleStore } from '../schedules/schedule-store.js';
import type { AuditLog } from './audit-log.js';

/**
 * The schedule store with every change audited: a task created (by the schedule_task tool, after
 * its approval) or cancelled (by the tool or `/hermes unschedule`). Wrapping the store, not each
 * caller, means a new way to create or cancel is audited without anyone remembering to.
 * The task text is not copied into the audit (it may be private); its hash and the schedule are.
 */
export function auditedSchedules(schedules: ScheduleStore, audit: Pick<AuditLog, 'record'>): ScheduleStore {
  return {
    ...schedules,
    forUser(speaker, conversation, replyTo) {
      const inner = schedules.forUser(speaker, conversation, replyTo);
      return {
        ...inner,
        async create(input) {
          const view = await inner.create(input);
          await audit.record({ kind: 'schedule', outcome: 'created', actor: speaker, conversation, tool: 'schedule_task', args: input, detail: { scheduleId: view.id, schedule: view.schedule, timezone: view.timezone, name: view.name } });
          return view;
        },
        async cancel(id) {
          const ok = await inner.cancel(id);
          if (ok) await audit.record({ kind: 'schedule', outcome: 'cancelled', actor: speaker, conversation, detail: { scheduleId: id } });
          return ok;
        },
      };
    },
  };
}
