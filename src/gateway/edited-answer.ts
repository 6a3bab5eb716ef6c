import type { Clock } from '../basics/clock.js';
import { createThrottledFlush } from '../basics/throttled-flush.js';
import type { Logger } from '../basics/log.js';
import type { AnswerStream } from '../basics/ports.js';

/**
 * An answer shown while it is written, on platforms that can only post and edit messages (Discord,
 * Slack when the workspace refuses streaming or there is no thread to stream into).
 *
 * The first text is posted at once (the time to the first visible word is ours to keep short);
 * after that the messages are edited at most once per `intervalMs`, start to start, because every
 * edit costs rate-limit budget and people cannot read faster anyway. Text past the platform's
 * limit continues in a new message; earlier messages are edited only when their part changed.
 * While the turn runs the last message ends with a progress line; the final edit removes it.
 */
export type MessageRole =
  /** The last message while the answer is being written (adapters may add a Stop button). */
  | 'live'
  /** An earlier part of a long answer: complete, no buttons. */
  | 'part'
  /** The last message of the finished answer (adapters may add feedback buttons). */
  | 'final';

export interface EditedMessageOps<Ref> {
  post(text: string, role: MessageRole): Promise<Ref>;
  edit(ref: Ref, text: string, role: MessageRole): Promise<void>;
  /** Removes a message the final text no longer needs (the answer was revised shorter). */
  remove?(ref: Ref): Promise<void>;
}

export interface EditedAnswerOptions {
  /**
   * The platform's rendering and splitting of the Markdown shown so far; `final` is the last
   * call (part markers, when the platform uses them, are added only then: the count is known).
   */
  split(markdown: string, final: boolean): string[];
  /** How the progress line reads in Markdown (it follows the text after a blank line). */
  progressLine(note: string): string;
  intervalMs: number;
  clock: Clock;
  log: Logger;
}

export function createEditedAnswer<Ref>(ops: EditedMessageOps<Ref>, opts: EditedAnswerOptions): AnswerStream {
  let text = '';
  let note: string | undefined;
  const refs: Ref[] = [];
  const shown: Array<{ text: string; role: MessageRole }> = [];

  /** `ended`: the turn stopped without an answer, so the last message gets no feedback buttons. */
  async function render(final: boolean, ended = false): Promise<void> {
    const doc = note !== undefined && !final ? `${text.trimEnd()}${text.trim() ? '\n\n' : ''}${opts.progressLine(note)}` : text;
    if (doc.trim() === '') return;
    const parts = opts.split(doc, final);
    for (const [i, part] of parts.entries()) {
      const role: MessageRole = i < parts.length - 1 || ended ? 'part' : final ? 'final' : 'live';
      if (i >= refs.length) {
        refs.push(await ops.post(part, role));
        shown.push({ text: part, role });
      } else if (shown[i]!.text !== part || shown[i]!.role !== role) {
        await ops.edit(refs[i]!, part, role);
        shown[i] = { text: part, role };
      }
    }
    if (final && ops.remove) {
      for (const ref of refs.splice(parts.length)) await ops.remove(ref);
      shown.length = parts.length;
    }
  }

  const throttle = createThrottledFlush({
    clock: opts.clock,
    intervalMs: opts.intervalMs,
    flush: () => render(false),
    onError: (err) => opts.log.warn({ err: (err as Error).message }, 'updating the answer being written failed; the next update tries again'),
  });

  return {
    append(markdown) {
      if (throttle.closed || markdown === '') return;
      text += markdown;
      throttle.request();
    },
    progress(line) {
      if (throttle.closed) return;
      note = line;
      throttle.request();
    },
    async finish(markdown) {
      await throttle.close();
      text = markdown;
      note = undefined;
      await render(true);
    },
    async end(why) {
      await throttle.close();
      note = undefined;
      if (why && refs.length > 0) text = `${text.trimEnd()}${text.trim() ? '\n\n' : ''}${why}`;
      if (refs.length > 0) await render(true, true).catch((err: Error) => opts.log.warn({ err: err.message }, 'ending the answer being written failed'));
    },
    get started() {
      return refs.length > 0;
    },
  };
}
