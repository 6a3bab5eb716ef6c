import * as z from 'zod';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';
import { formatInZone, parseDueTime } from '../src/state/reminders/parse-due-time.js';

/**
 * create_reminder / list_reminders / cancel_reminder. The user is never an argument: ctx.reminders
 * is already scoped to the verified speaker and the conversation the reminder will be posted in.
 * Errors are thrown with text written for the model (what was wrong, the current time, a fix).
 */

const LIST_TEXT_CHARS = 200;

function nowText(now: number, timezone: string): string {
  const utc = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const local = formatInZone(now, timezone);
  return local === utc ? utc : `${utc} (${local} in ${timezone})`;
}

export const createReminderTool = defineTool({
  name: 'create_reminder',
  description:
    'Schedule a reminder for the user who is speaking. At the given time the bot posts the text in this same ' +
    'channel or thread, mentioning that user. Use for "remind me at/in ...". Compute the absolute time yourself.',
  input: z.object({
    text: z.string().min(1).describe('What to remind about, written to the user, e.g. "water the plants".'),
    at: z
      .string()
      .min(1)
      .describe('When, as ISO 8601 date-time, preferably with an offset or Z (2026-03-14T15:30:00+01:00). Without an offset it is read in the deployment time zone.'),
  }),
  category: 'reminders',
  effect: 'durable',
  private: true,
  sideEffects: true,
  async run({ text, at }, ctx) {
    const tz = ctx.defaults.timezone;
    const now = ctx.clock.now();
    const parsed = parseDueTime(at, tz);
    if (!parsed.ok) {
      throw new Error(`Cannot read "at": ${parsed.problem} The current time is ${nowText(now, tz)}.`);
    }
    if (parsed.epochMs <= now) {
      throw new Error(
        `"at" (${formatInZone(parsed.epochMs, tz)}) is in the past. The current time is ${nowText(now, tz)}. ` +
          'Give a future time; for "in 10 minutes" add that to the current time.',
      );
    }
    const view = await ctx.reminders.create(text, parsed.epochMs);
    const when = formatInZone(view.dueAt, tz);
    const note = parsed.hadOffset ? '' : ` (the time had no offset, so it was read in ${tz})`;
    return `Reminder ${view.id} set for ${when}${note}. It will be posted in this conversation, mentioning the user.`;
  },
});

export const listRemindersTool = defineTool({
  name: 'list_reminders',
  description: "List the speaking user's upcoming reminders (id, time, text). Reminders that already fired or were cancelled are not listed.",
  input: z.object({}),
  category: 'reminders',
  private: true,
  maxResultChars: 8_000,
  async run(_args, ctx) {
    const tz = ctx.defaults.timezone;
    const views = await ctx.reminders.list();
    if (views.length === 0) return `The user has no upcoming reminders. The current time is ${nowText(ctx.clock.now(), tz)}.`;
    const lines = views.map((v) => {
      const short = v.text.length > LIST_TEXT_CHARS ? `${v.text.slice(0, LIST_TEXT_CHARS)}…` : v.text;
      return `- ${v.id} at ${formatInZone(v.dueAt, tz)}: ${short}`;
    });
    const noun = views.length === 1 ? 'reminder' : 'reminders';
    return { summary: `${views.length} upcoming ${noun}:\n${lines.join('\n')}`, raw: views };
  },
});

export const cancelReminderTool = defineTool({
  name: 'cancel_reminder',
  description: "Cancel one of the speaking user's upcoming reminders by its id (list_reminders shows ids).",
  input: z.object({
    id: z.string().min(1).describe('The reminder id, e.g. "k7m2qp".'),
  }),
  category: 'reminders',
  effect: 'durable',
  private: true,
  async run({ id }, ctx) {
    if (await ctx.reminders.cancel(id)) return `Reminder ${id.trim()} cancelled; it will not be posted.`;
    throw new Error(
      `No upcoming reminder with id "${id}" for this user: it may have fired already, been cancelled, or the id is wrong. ` +
        'Call list_reminders to see the current ids.',
    );
  },
});

export const reminderTools = [createReminderTool, listRemindersTool, cancelReminderTool];
