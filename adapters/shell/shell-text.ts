import { COMMANDS } from '../../src/gateway/commands.js';

/** Every line the terminal chat itself writes for a person (the gateway's own texts live in src/gateway/user-messages.ts). */

export const PROMPT = 'you> ';

export const THINKING = '… thinking';

export function banner(model: string, baseURL: string | undefined, logFile: string | undefined): string {
  const where = baseURL ? ` at ${baseURL}` : '';
  const logs = logFile ? ` · logs in ${logFile}` : '';
  return `Hermes terminal chat · model ${model}${where} · /help for commands, Ctrl-D to quit${logs}`;
}

export function terminalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.usage.length)) + 1;
  return [
    'Commands:',
    ...COMMANDS.map((c) => `  /${c.usage.padEnd(width)} ${c.summary}`),
    '',
    'Anything else you type is a message for me. While an approval waits, answer it with y or n;',
    'other commands still work, and a new message waits until the approval is decided.',
    'Ctrl-C stops a running task (or quits when idle); Ctrl-D on an empty line quits.',
  ].join('\n');
}

export function unknownCommand(word: string): string {
  return `There is no command /${word}; nothing was sent. Commands: ${COMMANDS.map((c) => `/${c.name}`).join(', ')}.`;
}

export function tooLong(length: number, max: number): string {
  return `That message is ${length.toLocaleString('en-US')} characters long; one message can have at most ${max.toLocaleString('en-US')}. Nothing was sent: shorten it or split it into parts.`;
}

export function queuedBehind(reason: 'answer' | 'approval'): string {
  return reason === 'approval'
    ? '(waiting: this message is sent once the approval above is answered with y or n)'
    : '(waiting: this message is sent after the current answer; /stop stops it)';
}

export const QUEUE_FULL = 'Too many messages are already waiting; this one was not sent. Wait for the answers, or /stop.';

/** `provenance`: the line naming the outside text the turn read before asking, if any. */
export function approvalPrompt(toolName: string, argsJson: string, argsDigest: string, provenance?: string): string {
  return `hermes wants to run ${toolName} with:\n${argsJson}\n(arguments sha256 ${argsDigest})\n${provenance ? `${provenance}\n` : ''}Approve? [y/N]`;
}

export const APPROVAL_STILL_WAITING = '(input ended with an approval still waiting; it stays pending until it expires)';

export function keptForNextChat(n: number): string {
  return `(${n} message${n === 1 ? '' : 's'} not sent yet: kept, and sent in the next chat once that approval is answered with y or n)`;
}

export function keptFromLastChat(n: number, approvalWaits: boolean): string {
  const what = `${n} message${n === 1 ? '' : 's'} from the last chat`;
  return approvalWaits ? `(${what} ${n === 1 ? 'is' : 'are'} sent once the approval above is answered with y or n)` : `(sending ${what})`;
}

export function heldNotSent(n: number): string {
  return `(${n} message${n === 1 ? '' : 's'} not sent: ${n === 1 ? 'it was' : 'they were'} waiting for that approval)`;
}

/** A warning from the logs, as one short line in the chat (the full record is in the log file). */
export function logNotice(level: 'warn' | 'error' | 'fatal', msg: string): string {
  return `(${level === 'warn' ? 'warning' : level}: ${msg.length > 300 ? `${msg.slice(0, 300)}…` : msg})`;
}
