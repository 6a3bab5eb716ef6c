import * as z from 'zod';
import { defineTool, type SchedulePreview, type ToolContext, type UserSchedules } from '../src/capabilities/toolkit/tool-api.js';
import { formatRunTime } from '../src/state/schedules/schedule-spec.js';
import { scheduleLine } from '../src/state/schedules/schedule-text.js';

/**
 * schedule_task / list_scheduled_tasks / cancel_scheduled_task. The user is never an argument:
 * ctx.schedules is already scoped to the verified speaker and the conversation runs post in.
 * Errors are thrown with text written for the model (what was wrong and how to fix it).
 * All three are private: in a shared thread, another person's turn sees stubs for a user's
 * schedule calls, never the tasks or ids (src/runtime/context/private-calls.ts).
 */

function schedulesOf(ctx: ToolContext): UserSchedules {
  if (!ctx.schedules) throw new Error('Scheduled tasks are not available in this deployment.');
  return ctx.schedules;
}

function runTimes(p: SchedulePreview): string {
  return p.nextRuns.map((t) => formatRunTime(t, p.timezone, p.seconds)).join('; ');
}

const scheduleInput = z.object({
  task: z.string().min(1).describe('What to do at each run, written as an instruction to yourself, e.g. "Summarise the open issues labelled bug and post the list".'),
  schedule: z
    .string()
    .min(1)
    .describe('When: a 5-field cron expression ("0 9 * * 1-5" = 09:00 Monday to Friday), "every <n> minutes|hours|days", or an ISO 8601 date-time for a single run (2026-03-14T09:00).'),
  timezone: z.string().optional().describe('IANA time zone the schedule is read in, e.g. Europe/Berlin. Default: the deployment time zone.'),
  name: z.string().optional().describe('A short name shown on every run, e.g. "Morning bug digest". Default: the start of the task.'),
});

export const scheduleTaskTool = defineTool({
  name: 'schedule_task',
  description:
    'Schedule a task to run again and again (or once, later): at each due time the bot does the task as the user who is ' +
    'speaking and posts the result in this same channel, thread or DM. Use for "every weekday at 9, post …", "each hour check …".',
  input: scheduleInput,
  category: 'schedules',
  private: true,
  sideEffects: true,
  effect: 'durable',
  needsApproval: true,
  async describeCall(args, ctx) {
    const p = await schedulesOf(ctx).preview(args);
    const first = args.schedule.trim().toLowerCase().startsWith('every') ? ' (counted from when it is approved)' : '';
    return [
      `Scheduled task "${p.name}", posted here at each run:`,
      `Task: ${p.task}`,
      `Schedule: ${p.words}`,
      `Next runs${first}: ${runTimes(p)}`,
    ].join('\n');
  },
  async run(args, ctx) {
    const v = await schedulesOf(ctx).create(args);
    return `Scheduled task ${v.id} ("${v.name}") created: ${v.words}. Next runs: ${runTimes(v)}. Each run is posted in this conversation; cancel with cancel_scheduled_task.`;
  },
});

export const listScheduledTasksTool = defineTool({
  name: 'list_scheduled_tasks',
  description: "List the speaking user's active scheduled tasks (id, name, schedule, next run, task).",
  input: z.object({}),
  category: 'schedules',
  private: true,
  maxResultChars: 8_000,
  async run(_args, ctx) {
    const views = await schedulesOf(ctx).list();
    if (views.length === 0) return 'The user has no active scheduled tasks.';
    return { summary: `${views.length} active scheduled task${views.length === 1 ? '' : 's'}:\n${views.map((v) => `- ${scheduleLine(v)}`).join('\n')}`, raw: views };
  },
});

export const cancelScheduledTaskTool = defineTool({
  name: 'cancel_scheduled_task',
  description: "Cancel one of the speaking user's scheduled tasks by its id (list_scheduled_tasks shows ids). It will not run again.",
  input: z.object({ id: z.string().min(1).describe('The schedule id, e.g. "s7m2qp".') }),
  category: 'schedules',
  private: true,
  sideEffects: true,
  effect: 'durable',
  async run({ id }, ctx) {
    if (await schedulesOf(ctx).cancel(id)) return `Scheduled task ${id.trim()} cancelled; it will not run again.`;
    throw new Error(
      `No active scheduled task with id "${id}" for this user: it may have been cancelled or finished, or the id is wrong. ` +
        'Call list_scheduled_tasks to see the current ids.',
    );
  },
});

export const scheduleTools = [scheduleTaskTool, listScheduledTasksTool, cancelScheduledTaskTool];
