import type { SessionStore } from '../state/sessions/session-store.js';
import type { FactStore } from '../state/memory/fact-store.js';
import type { Speaker } from '../basics/types.js';
import type { CommandInvocation, CommandReply } from '../basics/ports.js';
import { helpText, type ParsedCommand } from './commands.js';
import { NOTHING_RUNNING } from './user-messages.js';
import type { ScheduleStore } from '../state/schedules/schedule-store.js';
import { scheduleList, unscheduleAnswer } from '../state/schedules/schedule-text.js';

export interface CommandDeps {
  sessions: SessionStore;
  facts: FactStore;
  isAdmin(s: Speaker): boolean;
  /**
   * Stops what runs here for `/hermes stop` (only the requester or an admin may stop the running
   * turn; `refused` says so otherwise) and `/hermes new` (whatever runs, whoever started it).
   */
  stop(): Promise<{ stoppedTurn: boolean; cancelledApprovals: number; refused?: string }>;
  queueDepth(): number;
  /** Text for `/hermes status`: deployment-wide for admins, the speaker's own usage otherwise. */
  status(speaker: Speaker, isAdmin: boolean): Promise<string>;
  /** Absent when scheduled tasks are not wired; the commands then say so. */
  schedules?: ScheduleStore;
  /** Text for `/hermes policy`: the channel policy in force where it is asked. */
  policy(cmd: CommandInvocation): Promise<string>;
}

const NO_SCHEDULES = 'Scheduled tasks are not available here.';

const PREFIX: Record<string, string> = { slack: '/hermes ', discord: '/hermes ', shell: '/' };

/** Runs one private subcommand. Every branch answers; none throws for bad input. */
export async function runCommand(parsed: Exclude<ParsedCommand, { kind: 'task' }>, cmd: CommandInvocation, deps: CommandDeps): Promise<CommandReply> {
  const prefix = PREFIX[cmd.conversation.platform] ?? '/hermes ';
  if (parsed.kind === 'empty') return { kind: 'private', text: helpText(prefix) };
  switch (parsed.name) {
    case 'help':
      return { kind: 'private', text: helpText(prefix) };
    case 'new': {
      await deps.stop();
      await deps.sessions.startNew(cmd.conversation);
      return { kind: 'private', text: `Started a fresh conversation here. The previous one is archived; what I remember about you is kept (see \`${prefix}memory\`).` };
    }
    case 'stop': {
      const r = await deps.stop();
      const parts = [];
      if (r.stoppedTurn) parts.push('stopped the running task');
      if (r.cancelledApprovals) parts.push(`cancelled ${r.cancelledApprovals} pending approval${r.cancelledApprovals > 1 ? 's' : ''}`);
      if (r.refused) return { kind: 'private', text: r.cancelledApprovals ? `${r.refused} (Cancelled ${r.cancelledApprovals} pending approval${r.cancelledApprovals > 1 ? 's' : ''} of yours.)` : r.refused };
      return { kind: 'private', text: parts.length ? `OK: ${parts.join(' and ')}.` : NOTHING_RUNNING };
    }
    case 'memory': {
      const facts = await deps.facts.list(cmd.speaker);
      if (facts.length === 0) return { kind: 'private', text: 'I do not remember anything about you yet.' };
      const lines = facts.map((f) => `• \`${f.id}\` ${f.text}`);
      return { kind: 'private', text: [`What I remember about you (${facts.length}):`, ...lines, `Delete with \`${prefix}forget <id>\` or \`${prefix}forget all\`.`].join('\n') };
    }
    case 'forget': {
      const arg = parsed.arg.trim();
      if (!arg) return { kind: 'private', text: `Say which fact: \`${prefix}forget <id>\` (ids are in \`${prefix}memory\`), or \`${prefix}forget all\`.` };
      const n = await deps.facts.forget(cmd.speaker, arg);
      if (arg.toLowerCase() === 'all') return { kind: 'private', text: n ? `Forgot all ${n} facts about you.` : 'There was nothing to forget.' };
      return { kind: 'private', text: n ? `Forgot fact \`${arg}\`.` : `I have no fact \`${arg}\` about you. See \`${prefix}memory\`.` };
    }
    case 'status':
      return { kind: 'private', text: await deps.status(cmd.speaker, deps.isAdmin(cmd.speaker)) };
    case 'policy':
      return { kind: 'private', text: await deps.policy(cmd) };
    // Only the speaker's own schedules, whoever asks: another user's ids match nothing.
    case 'schedules': {
      if (!deps.schedules) return { kind: 'private', text: NO_SCHEDULES };
      const views = await deps.schedules.forUser(cmd.speaker, cmd.conversation).list();
      // The list is private to the speaker, so tasks set in their DMs are shown in full.
      const full = await Promise.all(views.map(async (v) => ({ ...v, task: (await deps.schedules?.get(v.id))?.task ?? v.task })));
      return { kind: 'private', text: scheduleList(full, prefix) };
    }
    case 'unschedule': {
      if (!deps.schedules) return { kind: 'private', text: NO_SCHEDULES };
      const id = parsed.arg.trim();
      const ok = id !== '' && (await deps.schedules.forUser(cmd.speaker, cmd.conversation).cancel(id));
      return { kind: 'private', text: unscheduleAnswer(id, ok, prefix) };
    }
  }
}
