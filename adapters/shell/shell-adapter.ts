import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import os from 'node:os';
import type { Readable, Writable } from 'node:stream';
import type { Adapter, AnswerStream, ApprovalResolution, ApprovalView, GatewayApi, OutboundPort } from '../../src/basics/ports.js';
import { parseCommand } from '../../src/gateway/commands.js';
import { approvalSourcesLine } from '../../src/gateway/user-messages.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { RawLineEditor } from './raw-line-editor.js';
import * as say from './shell-text.js';

export interface ShellAdapterOptions {
  gateway: GatewayApi;
  input: Readable;
  output: Writable;
  /**
   * A person at a terminal: raw-mode input read while a turn runs, a prompt, a "thinking" line.
   * Otherwise (a pipe) lines are taken one at a time, each after the previous one was answered.
   */
  interactive?: boolean;
  /** Called when input ends and every answer has been printed (main exits then). */
  onEnd?: (info: { sawInput: boolean }) => void;
  userName?: string;
  /** One message's limit, as the gateway's (40,000). */
  maxMessageChars?: number;
  /** A model call silent this long shows the "thinking" line (interactive only). */
  thinkingDelayMs?: number;
  /**
   * Questions still waiting behind an approval when input ends are kept in this file and sent in
   * the next chat, once that approval is decided (nothing typed is lost with the pipe).
   */
  waitingFile?: string;
}

const OUTCOME_WORD: Record<ApprovalResolution['outcome'], string> = {
  approved: 'approved',
  denied: 'denied',
  expired: 'expired (not run)',
  cancelled: 'cancelled (not run)',
};

const YES = /^(y|yes)$/i;
const NO = /^(n|no)$/i;
/** Messages waiting behind an answer or an approval; more are refused, not buffered without end. */
const MAX_WAITING = 20;

/**
 * Terminal chat on the same core. Commands run at once and `y`/`n` answer a waiting approval;
 * questions go one at a time, each after the previous one was answered, and never while an
 * approval waits (they wait with it, never count as a "no"), whether it was asked in this run or
 * shown again from an earlier one, and whether the input is a terminal or a pipe. Questions still
 * waiting when input ends are kept (`waitingFile`) for the next chat, never dropped.
 */
export function createShellAdapter(opts: ShellAdapterOptions): Adapter & { notice(text: string): void } {
  const user = opts.userName ?? (os.userInfo().username || 'you');
  const interactive = opts.interactive === true;
  const maxChars = opts.maxMessageChars ?? 40_000;
  const conversation: Conversation = { platform: 'shell', workspaceId: 'local', channelId: 'terminal', isDm: true };
  const speaker: Speaker = { platform: 'shell', workspaceId: 'local', userId: user, displayName: user };
  const editor = new RawLineEditor(maxChars);

  let ended = false;
  let sawInput = false;
  /** A question was sent (or an approval decided) and its answer has not arrived yet. */
  let answering = false;
  let approval: { id: string } | undefined;
  /** The prompt is drawn only once the terminal is being read (lines shown before it stand alone). */
  let reading = false;
  const held: string[] = [];
  let thinkingTimer: NodeJS.Timeout | undefined;
  let pipeLines: AsyncIterator<string> | undefined;
  let wake: (() => void) | undefined;
  /** Interactive input is handled in order, one line after the other, on this chain. */
  let chain: Promise<void> = Promise.resolve();
  const later = (step: () => Promise<void> | void) => {
    chain = chain.then(step).catch((err: Error) => write(`hermes> Something went wrong in the terminal chat (${err.message}).`));
  };
  /** Something that blocked waiting questions went away. */
  const unblocked = () => {
    wake?.();
    if (interactive && held.length) later(pump);
  };

  const write = (text: string) => {
    const body = text.endsWith('\n') ? text : `${text}\n`;
    if (!interactive) return void opts.output.write(body);
    // Clear the prompt line, print, then draw the prompt and what was typed so far again.
    opts.output.write(`\r\x1b[2K${body}${ended || !reading ? '' : say.PROMPT + editor.current}`);
  };

  const armThinking = () => {
    clearTimeout(thinkingTimer);
    if (!interactive || !answering) return;
    thinkingTimer = setTimeout(() => write(say.THINKING), opts.thinkingDelayMs ?? 800);
    thinkingTimer.unref?.();
  };
  const output = (text: string) => {
    write(text);
    armThinking();
  };
  const answered = () => {
    answering = false;
    clearTimeout(thinkingTimer);
    unblocked();
  };

  const port: OutboundPort = {
    platform: 'shell',
    promptsVanish: true,
    async sendText(_c, markdown) {
      answered();
      write(`hermes> ${markdown}`);
    },
    async showApproval(_c, view: ApprovalView) {
      approval = { id: view.id };
      answered();
      const described = view.description ? `${view.description}\n` : '';
      write(described + say.approvalPrompt(view.toolName, view.argsJson, view.argsDigest, view.sources?.length ? approvalSourcesLine(view.sources) : undefined));
      return view.id;
    },
    async resolveApproval(_c, _ref, view, resolution) {
      const who = resolution.decidedBy ? ` by ${resolution.decidedBy.displayName ?? resolution.decidedBy.userId}` : '';
      output(`(${view.toolName}: ${OUTCOME_WORD[resolution.outcome]}${resolution.outcome === 'approved' || resolution.outcome === 'denied' ? who : ''})`);
      if (approval?.id === view.id) approval = undefined;
      unblocked();
    },
    async startWorking() {
      return async () => undefined;
    },
    // A progress line (a tool running) stands instead of "thinking": the model is not being waited on.
    async showProgress(_c, note) {
      clearTimeout(thinkingTimer);
      write(`… ${note}`);
    },
    // The terminal is on the same machine: the file is already there, so its path is the delivery.
    async sendFile(_c, file) {
      output(`hermes> (file) ${file.path}${file.comment ? ` — ${file.comment}` : ''}`);
    },
    mention: (userId) => `@${userId}`,
    openAnswer: () => streamedAnswer(),
  };
  opts.gateway.registerPort(port);

  /**
   * The answer printed as it comes: one `hermes>` line that grows; a progress note ends the line
   * and the text goes on in a new one. The prompt is drawn again when the answer is complete.
   */
  function streamedAnswer(): AnswerStream {
    let shown = '';
    let lineOpen = false;
    let started = false;
    const put = (piece: string) => {
      // A line starts with the words: the blank lines between steps are the line break itself.
      const text = lineOpen ? piece : piece.replace(/^\s+/, '');
      if (text === '') return;
      if (!lineOpen) {
        clearTimeout(thinkingTimer);
        opts.output.write(interactive ? `\r\x1b[2Khermes> ` : 'hermes> ');
        lineOpen = true;
      }
      opts.output.write(text);
      started = true;
    };
    const closeLine = () => {
      if (!lineOpen) return;
      lineOpen = false;
      opts.output.write(interactive && !ended ? `\n${say.PROMPT}${editor.current}` : '\n');
    };
    return {
      append(markdown) {
        put(markdown);
        shown += markdown;
      },
      progress(note) {
        closeLine();
        // As showProgress: the progress line stands instead of "thinking" while the tool runs.
        clearTimeout(thinkingTimer);
        write(`… ${note}`);
      },
      async finish(markdown) {
        const rest = markdown.startsWith(shown) ? markdown.slice(shown.length) : `\n${markdown}`;
        if (rest) put(rest);
        closeLine();
        answered();
      },
      async end() {
        closeLine();
      },
      get started() {
        return started;
      },
    };
  }

  async function decide(id: string, approve: boolean): Promise<void> {
    approval = undefined;
    answering = true;
    const result = await opts.gateway.decideApproval({ approvalId: id, decision: approve ? 'approve' : 'deny', decidedBy: speaker });
    if (result.kind !== 'applied') {
      answered();
      write(`hermes> ${'text' in result ? result.text : `already ${result.outcome}`}`);
    } else {
      armThinking();
    }
  }

  /** `/…` lines. Returns false when the line is a task after all (`/hermes <task>`). */
  async function command(line: string): Promise<boolean> {
    const viaHermes = /^\/hermes(\s|$)/i.test(line);
    const text = line.replace(/^\/(hermes\b\s*)?/i, '');
    const parsed = parseCommand(text);
    if (parsed.kind === 'task') {
      if (viaHermes) return false;
      write(say.unknownCommand(text.split(/\s/)[0] ?? ''));
      return true;
    }
    if (parsed.kind === 'empty' || parsed.name === 'help') {
      write(say.terminalHelp());
      return true;
    }
    const reply = await opts.gateway.handleCommand({ conversation, speaker, text });
    write(reply.text);
    // A stopped turn ends without an answer of its own; the next question may go.
    if (parsed.name === 'stop' || parsed.name === 'new') answered();
    return true;
  }

  async function send(text: string): Promise<void> {
    answering = true;
    armThinking();
    const result = await opts.gateway.handleMessage({ id: `shell:${process.pid}:${Date.now()}:${Math.random().toString(36).slice(2, 8)}`, conversation, speaker, text, mentioned: true });
    if (result !== 'queued') answered();
  }

  /** Sends the next waiting question when nothing blocks it. */
  async function pump(): Promise<void> {
    while (!answering && held.length > 0 && !approval) {
      await send(held.shift()!);
    }
  }

  /** One line from a person (or a pipe). Never throws: a failure is written, the chat goes on. */
  async function handle(raw: string): Promise<void> {
    const line = raw.trim();
    if (!line) return;
    try {
      if (approval && (YES.test(line) || NO.test(line))) return await decide(approval.id, YES.test(line));
      if (line.startsWith('/') && (await command(line))) return;
      const text = line.replace(/^\/hermes\s+/i, '');
      const blockedBy = approval ? 'approval' : answering ? 'answer' : undefined;
      if (!blockedBy && held.length === 0) return await send(text);
      if (held.length >= MAX_WAITING) return write(say.QUEUE_FULL);
      held.push(text);
      if (interactive) write(say.queuedBehind(blockedBy ?? 'answer'));
      await pump();
    } catch (err) {
      answered();
      write(`hermes> Something went wrong handling that line (${(err as Error).message}); nothing was lost, try again.`);
    }
  }

  function finish(): void {
    if (ended) return;
    ended = true;
    clearTimeout(thinkingTimer);
    if (approval) write(say.APPROVAL_STILL_WAITING);
    if (held.length && opts.waitingFile && keepWaiting(opts.waitingFile, held)) write(say.keptForNextChat(held.length));
    else if (held.length) write(say.heldNotSent(held.length));
    opts.onEnd?.({ sawInput });
  }

  /** Waits until the previous question was answered (or an approval of this run waits with nothing runnable). */
  const settledForPipe = () =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!answering) {
          wake = undefined;
          resolve();
        } else wake = check;
      };
      check();
    });

  async function readPipe(): Promise<void> {
    const rl = createInterface({ input: opts.input, terminal: false, crlfDelay: Infinity });
    pipeLines = rl[Symbol.asyncIterator]();
    try {
      for (;;) {
        await settledForPipe();
        await pump();
        await settledForPipe();
        const next = await pipeLines.next();
        if (next.done) break;
        sawInput = true;
        await handle(next.value);
      }
      // Input ended: what still waits behind an answer goes now; behind an approval it is kept.
      // Each round sends one waiting question, so this ends.
      for (;;) {
        await settledForPipe();
        if (held.length === 0 || approval) break;
        await pump();
      }
    } finally {
      finish();
    }
  }

  function readTerminal(): void {
    const input = opts.input as Readable & { setRawMode?(on: boolean): void };
    input.setRawMode?.(true);
    opts.output.write('\x1b[?2004h'); // bracketed paste on
    input.setEncoding('utf8');
    const stop = () => {
      input.setRawMode?.(false);
      opts.output.write('\x1b[?2004l\r\n');
      input.pause();
      finish();
    };
    input.on('data', (chunk: string) => {
      sawInput = true;
      const { events, echo } = editor.feed(chunk);
      if (echo) opts.output.write(echo);
      for (const ev of events) {
        if (ev.kind === 'line') {
          later(async () => {
            await handle(ev.text);
            if (!ended && !editor.current) opts.output.write(`\r\x1b[2K${say.PROMPT}`);
          });
        } else if (ev.kind === 'too_long') write(say.tooLong(ev.length, maxChars));
        else if (ev.kind === 'eof') later(stop);
        else if (ev.kind === 'interrupt') {
          if (editor.current) {
            editor.clear();
            write('^C');
          } else if (answering) later(() => handle('/stop'));
          else later(stop);
        }
      }
    });
    input.on('end', () => later(stop));
    reading = true;
    opts.output.write(say.PROMPT);
  }

  return {
    port,
    notice: (text) => write(text),
    async start() {
      const kept = opts.waitingFile ? takeWaiting(opts.waitingFile) : [];
      if (kept.length) {
        held.push(...kept);
        write(say.keptFromLastChat(kept.length, approval !== undefined));
      }
      if (interactive) {
        readTerminal();
        if (held.length) later(pump);
      }
      else void readPipe();
    },
    async stop() {
      answered();
      await pipeLines?.return?.();
      if (interactive) (opts.input as Readable & { setRawMode?(on: boolean): void }).setRawMode?.(false);
    },
  };
}

/** Writes the waiting questions for the next chat; false when the file cannot be written. */
function keepWaiting(file: string, lines: string[]): boolean {
  try {
    writeFileSync(file, `${JSON.stringify(lines)}\n`, { mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

/** The questions an earlier chat left waiting (the file is removed: they are this chat's now). */
function takeWaiting(file: string): string[] {
  let lines: unknown;
  try {
    lines = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
  rmSync(file, { force: true });
  return Array.isArray(lines) ? lines.filter((l): l is string => typeof l === 'string').slice(0, MAX_WAITING) : [];
}
