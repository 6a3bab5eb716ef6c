import { wellFormed } from './well-formed.js';

/**
 * Which part of a streamed answer a person may see while the model is still writing it.
 *
 * The whole answer is parsed once it is complete (tool-text.ts); this filter only decides, chunk
 * by chunk, what is already certain to be answer text. Anything that may still turn out to be a
 * tool call is held back until it is decided, because once text is on a person's screen it
 * cannot be taken back:
 * - `<tool_call>…</tool_call>` blocks (Hermes-family models) never pass; a `<` that may be the
 *   start of one waits for the next characters. `<think>…</think>` reasoning is dropped the same way.
 * - An answer that opens with `{` or `[` (after whitespace), or with a code fence whose body opens
 *   so, may be a bare JSON tool call (Llama-style). It is held until text after the closing
 *   bracket or fence proves it is prose; otherwise it waits for the end of the answer.
 * - JSON mode (HERMES_TOOL_MODE=json) holds everything: its answer is a JSON object whose
 *   meaning is known only at the end, and the provider then releases the parsed final answer.
 * - Whitespace at the end of what is seen so far is held (the final answer is trimmed), and so is
 *   a lone first half of a surrogate pair that the next chunk completes.
 * The text released is always a prefix of what the complete answer's content will be, except for
 * a model that closes a `</think>` it never opened (everything before it was reasoning); callers
 * compare at the end and replace the shown text in that case.
 */
export interface VisibleTextFilter {
  /** Feeds the next chunk of the model's raw text; returns the text that is now certain to be shown. */
  push(chunk: string): string;
  /** Everything push returned so far. */
  readonly released: string;
}

export type VisibleTextMode =
  /** Native tool calling; `toolNames` non-empty means a bare JSON answer may be a call. */
  | { kind: 'native'; toolNames: ReadonlySet<string> }
  | { kind: 'json' };

const TOOL_CALL_OPEN = '<tool_call>';
const TOOL_CALL_CLOSE = '</tool_call>';
const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const FENCE = '```';

type State =
  | { kind: 'start' }
  | { kind: 'text' }
  | { kind: 'hidden'; close: string }
  | { kind: 'json'; start: number; scan: JsonScan }
  | { kind: 'fence'; start: number }
  | { kind: 'held' };

export function createVisibleTextFilter(mode: VisibleTextMode): VisibleTextFilter {
  let raw = '';
  let pos = 0;
  let state: State = mode.kind === 'json' ? { kind: 'held' } : { kind: 'start' };
  /** Text decided visible, not yet released because it ends in whitespace. */
  let pending = '';
  let released = '';
  /** Once the opening of the answer was decided to be prose, it is never held as a call again. */
  let openingDecided = mode.kind === 'json' || mode.toolNames.size === 0;

  const visible = (text: string) => {
    pending += text;
  };

  /** Advances `pos` as far as the text allows; returns false when it must wait for more. */
  function step(): boolean {
    switch (state.kind) {
      case 'held':
        pos = raw.length;
        return false;
      case 'start': {
        while (pos < raw.length && /\s/.test(raw[pos]!)) pos += 1;
        if (pos >= raw.length) return false;
        const c = raw[pos]!;
        if (!openingDecided && (c === '{' || c === '[')) state = { kind: 'json', start: pos, scan: newJsonScan() };
        else if (!openingDecided && c === '`') state = { kind: 'fence', start: pos };
        else state = { kind: 'text' };
        return true;
      }
      case 'text': {
        const lt = raw.indexOf('<', pos);
        const end = lt < 0 ? raw.length : lt;
        if (end > pos) {
          // A first surrogate half at the very end waits for its partner.
          const cut = end === raw.length && isHighSurrogate(raw.charCodeAt(end - 1)) ? end - 1 : end;
          visible(raw.slice(pos, cut));
          pos = cut;
          return cut === end && lt >= 0;
        }
        const rest = raw.slice(pos, pos + TOOL_CALL_OPEN.length);
        for (const [open, close] of [[TOOL_CALL_OPEN, TOOL_CALL_CLOSE], [THINK_OPEN, THINK_CLOSE]] as const) {
          if (rest.startsWith(open)) {
            pos += open.length;
            state = { kind: 'hidden', close };
            return true;
          }
        }
        if (TOOL_CALL_OPEN.startsWith(rest) || THINK_OPEN.startsWith(rest)) return false; // may still become a tag
        visible('<');
        pos += 1;
        return true;
      }
      case 'hidden': {
        const at = raw.indexOf(state.close, pos);
        if (at < 0) {
          // Skip what cannot be part of the closing tag, so long hidden blocks are scanned once.
          pos = Math.max(pos, raw.length - state.close.length + 1);
          return false;
        }
        pos = at + state.close.length;
        state = released === '' && pending.trim() === '' ? { kind: 'start' } : { kind: 'text' };
        if (state.kind === 'start') pending = '';
        return true;
      }
      case 'json': {
        const verdict = advanceJson(state.scan, raw, state.start);
        if (verdict === 'wait') return false;
        if (verdict === 'prose') return releaseOpening(state.start);
        return false; // a complete JSON value with nothing after it: decided only at the end
      }
      case 'fence': {
        const verdict = fenceVerdict(raw, state.start);
        if (verdict === 'prose') return releaseOpening(state.start);
        return false;
      }
    }
  }

  function releaseOpening(start: number): boolean {
    openingDecided = true;
    pos = start;
    state = { kind: 'text' };
    return true;
  }

  return {
    push(chunk: string): string {
      raw += chunk;
      // Bounded: every step either advances pos, changes state towards text, or stops.
      for (let guard = 0; guard < raw.length * 4 + 16 && step(); guard++);
      const keep = pending.trimEnd().length;
      const out = wellFormed(pending.slice(0, keep));
      pending = pending.slice(keep);
      released += out;
      return out;
    },
    get released() {
      return released;
    },
  };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** String-aware bracket scan of a JSON value at the start of the answer, resumable across chunks. */
interface JsonScan {
  at: number;
  depth: number;
  inString: boolean;
  escaped: boolean;
  /** Index just past the value's closing bracket, once found. */
  closedAt: number;
}

function newJsonScan(): JsonScan {
  return { at: -1, depth: 0, inString: false, escaped: false, closedAt: -1 };
}

/**
 * 'prose' when the text cannot be a bare tool call: the value does not open like one (`{"` or
 * `[{`), or non-blank text follows it. 'wait' while undecided; 'value' when a complete value
 * stands alone so far.
 */
function advanceJson(scan: JsonScan, raw: string, start: number): 'wait' | 'prose' | 'value' {
  const open = raw[start]!;
  const firstInside = firstNonBlank(raw, start + 1);
  if (firstInside < 0) return 'wait';
  const expected = open === '{' ? '"}' : '{';
  if (!expected.includes(raw[firstInside]!)) return 'prose';
  if (scan.at < 0) scan.at = start;
  for (; scan.closedAt < 0 && scan.at < raw.length; scan.at++) {
    const ch = raw[scan.at];
    if (scan.inString) {
      if (scan.escaped) scan.escaped = false;
      else if (ch === '\\') scan.escaped = true;
      else if (ch === '"') scan.inString = false;
    } else if (ch === '"') scan.inString = true;
    else if (ch === '{' || ch === '[') scan.depth += 1;
    else if (ch === '}' || ch === ']') {
      scan.depth -= 1;
      if (scan.depth === 0) scan.closedAt = scan.at + 1;
    }
  }
  if (scan.closedAt < 0) return 'wait';
  return firstNonBlank(raw, scan.closedAt) >= 0 ? 'prose' : 'value';
}

/** A fenced opening: a call only if the fence's body opens like JSON and nothing follows the fence. */
function fenceVerdict(raw: string, start: number): 'wait' | 'prose' | 'held' {
  const head = raw.slice(start, start + FENCE.length);
  if (!FENCE.startsWith(head)) return 'prose';
  if (head.length < FENCE.length) return 'wait';
  let i = start + FENCE.length;
  while (i < raw.length && /[a-zA-Z]/.test(raw[i]!)) i += 1;
  const body = firstNonBlank(raw, i);
  if (body < 0) return 'wait';
  if (raw[body] !== '{' && raw[body] !== '[') return 'prose';
  const close = raw.indexOf(FENCE, body);
  if (close < 0) return 'wait';
  return firstNonBlank(raw, close + FENCE.length) >= 0 ? 'prose' : 'held';
}

function firstNonBlank(text: string, from: number): number {
  for (let i = from; i < text.length; i++) if (!/\s/.test(text[i]!)) return i;
  return -1;
}
