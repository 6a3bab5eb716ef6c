/**
 * The one `/hermes` command registry. Slack and Discord pass the text after `/hermes`; the
 * terminal passes the text after `/`. Everything that is not a known subcommand is a task.
 */

export type CommandName = 'help' | 'new' | 'stop' | 'memory' | 'forget' | 'status' | 'policy' | 'schedules' | 'unschedule';

export interface CommandInfo {
  name: CommandName;
  usage: string;
  summary: string;
}

/** Order is the order `help` lists them in. All of these answer privately. */
export const COMMANDS: readonly CommandInfo[] = [
  { name: 'help', usage: 'help', summary: 'show this list' },
  { name: 'new', usage: 'new', summary: 'start a fresh conversation here (the old one is archived)' },
  { name: 'stop', usage: 'stop', summary: 'stop the running task and cancel a pending approval' },
  { name: 'memory', usage: 'memory', summary: 'list what I remember about you' },
  { name: 'forget', usage: 'forget <id|all>', summary: 'delete one remembered fact, or all of them' },
  { name: 'status', usage: 'status', summary: 'model, queue, approvals and usage' },
  { name: 'policy', usage: 'policy', summary: 'what this channel\'s policy allows here (tools, who may use and approve, budget)' },
  { name: 'schedules', usage: 'schedules', summary: 'list your scheduled tasks' },
  { name: 'unschedule', usage: 'unschedule <id>', summary: 'cancel one of your scheduled tasks' },
];

export type ParsedCommand =
  | { kind: 'command'; name: CommandName; arg: string }
  | { kind: 'task'; text: string }
  | { kind: 'empty' };

export function parseCommand(text: string): ParsedCommand {
  const trimmed = text.trim();
  if (trimmed === '') return { kind: 'empty' };
  const match = /^(\S+)(?:\s+([\s\S]*))?$/.exec(trimmed);
  const word = (match?.[1] ?? '').toLowerCase().replace(/^\//, '');
  const info = COMMANDS.find((c) => c.name === word);
  if (!info) return { kind: 'task', text: trimmed };
  return { kind: 'command', name: info.name, arg: (match?.[2] ?? '').trim() };
}

/** Whether an invocation answers privately; adapters that must choose visibility up front use it. */
export function isPrivateCommand(text: string): boolean {
  return parseCommand(text).kind !== 'task';
}

export function helpText(prefix: string): string {
  const lines = COMMANDS.map((c) => `• \`${prefix}${c.usage}\` — ${c.summary}`);
  lines.push(`• \`${prefix === '/' ? '' : prefix}<task>\` — anything else is a task for me, answered in the channel`);
  return ['Hermes commands:', ...lines].join('\n');
}
