import type { TurnSink } from '../agent/turn-sink.js';
import type { AnswerStream } from '../basics/ports.js';

/**
 * The turn's sink when its answer is shown as it is written: the model's text goes to the
 * platform's AnswerStream, tool calls and sub-agent notes become its progress line.
 *
 * The message reads as one document: the text each model step wrote, steps apart by a blank line.
 * A step whose text was a preamble to tool calls stays ("Let me look that up."); a step the loop
 * withdrew (`retry`: unreadable tool calls, ungrounded figures) leaves the document, so the final
 * document no longer extends what was shown and the adapter replaces it (AnswerStream.finish).
 */
export interface AnswerSink extends TurnSink {
  /** The whole message as it should finally read, given the turn's final answer. */
  document(finalText: string): string;
}

const STEP_BREAK = '\n\n';

export function answerSink(answer: AnswerStream, toolsNote: (names: string[]) => string): AnswerSink {
  /** Text of the finished steps that stays in the message. */
  let kept = '';
  /** Text streamed in the current step. */
  let step = '';
  /** Whether anything of the current step has been appended (its break comes first). */
  let stepShown = false;

  return {
    textDelta(text) {
      if (!stepShown && kept !== '') answer.append(STEP_BREAK);
      stepShown = true;
      step += text;
      answer.append(text);
    },
    stepEnded(kind) {
      if (kind === 'tool_calls' && step.trim() !== '') kept = kept === '' ? step.trimEnd() : `${kept}${STEP_BREAK}${step.trimEnd()}`;
      if (kind !== 'answer') {
        step = '';
        stepShown = false;
      }
    },
    toolsStarting(names) {
      answer.progress(toolsNote(names));
    },
    progress(note) {
      answer.progress(note);
    },
    document(finalText) {
      if (kept === '') return finalText;
      return finalText === '' ? kept : `${kept}${STEP_BREAK}${finalText}`;
    },
  };
}
