/**
 * A model call's prompt in the trace, written once. The prompt of step N of a turn is the prompt
 * of step N-1 plus the messages the step added (the assistant's tool calls, their results), so a
 * model_call record written with the whole prompt repeats every earlier message: the bytes, the
 * serialising and the secret scan of a turn grew with the square of its steps.
 *
 * The tracer writes a model call whose prompt starts with the previous call's messages (of the same
 * turn and the same agent run, in the same day file) as
 *   `"messages": [only the messages after those], "promptFrom": { "step": <previous step>, "keep": <how many> }`
 * and a reader puts the prompt back together with `createPromptJoiner` (every reader of files does:
 * eval and replay, the dashboard, `npm run trace`). A record without `promptFrom` — the first call of
 * a run, any call whose earlier messages changed (a running summary, a new system prompt), every
 * record written before this format — carries its whole prompt, as before.
 *
 * Telemetry is unaffected: it is handed the records in the process, before they are written.
 */

/** What a prompt reference in a model_call line says: the first `keep` messages are those of the prompt of `step`. */
export interface PromptFrom {
  step: number;
  keep: number;
}

interface Prompt {
  step: number;
  messages: readonly unknown[];
}

/** Runs of model calls are told apart by turn and by sub-agent run (`agent` under the parent call `parentCallId`). */
function runKey(r: { agent?: unknown; parentCallId?: unknown }): string {
  return r.agent === undefined && r.parentCallId === undefined ? '' : `${String(r.agent)}\u0000${String(r.parentCallId)}`;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
};

/**
 * True when `a` and `b` serialise to the same JSON (up to key order). Anything but plain JSON values
 * counts as different: a shorter shared prefix only costs bytes, a wrong one would change the prompt.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return typeof a !== 'object' || a === null || sameJsonObject(a, a);
  if (typeof a !== typeof b || typeof a !== 'object' || a === null || b === null) return false;
  return sameJsonObject(a, b as object);
}

function sameJsonObject(a: object, b: object): boolean {
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  let n = 0;
  for (const k in a) {
    const v = a[k];
    // An undefined value is left out of JSON; it must be absent (or undefined) on the other side too.
    if (v === undefined) {
      if (b[k] !== undefined) return false;
      continue;
    }
    if (typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint') return false;
    if (!Object.prototype.hasOwnProperty.call(b, k) || !sameJson(v, b[k])) return false;
    n++;
  }
  let m = 0;
  for (const k in b) if (b[k] !== undefined) m++;
  return n === m;
}

/** How many messages at the start of `now` are the same as at the start of `before`. */
function sharedPrefix(before: readonly unknown[], now: readonly unknown[]): number {
  const n = Math.min(before.length, now.length);
  let i = 0;
  while (i < n && sameJson(before[i], now[i])) i++;
  return i;
}

/** Runs of one turn whose last prompt is remembered, bounded (a turn that never writes its end must not keep its prompt forever). */
const MAX_TURNS = 512;

/**
 * The writer's side (the tracer): remembers the last prompt of each run of model calls and turns a
 * model_call record into the one to write. The messages are kept by reference: a prompt is built
 * afresh for every call and not changed after it was sent (the tracer serialises at record time;
 * what is compared later is the same prompt).
 */
export function createPromptDeltas(): {
  /** The record to write for a model_call recorded into the day file `day`. */
  encode<E extends { type: string; turnId?: string; step?: number; messages?: unknown; agent?: unknown; parentCallId?: unknown }>(event: E, day: string): E | (E & { promptFrom: PromptFrom });
  /** A record that ends a run (turn_end, a pending approval, subagent) was recorded: its prompts are let go. */
  ended(event: { type: string; turnId?: string; agent?: unknown; callId?: unknown; status?: unknown }): void;
  /** Lines were lost (a failed write, an unserialisable record): the next call of every run is written whole. */
  reset(): void;
} {
  let day = '';
  const turns = new Map<string, Map<string, Prompt>>();
  return {
    encode(event, at) {
      const { turnId, step, messages } = event;
      if (event.type !== 'model_call' || typeof turnId !== 'string' || typeof step !== 'number' || !Array.isArray(messages)) return event;
      if (at !== day) {
        // Readers read a day file on its own: a reference never points into another file.
        turns.clear();
        day = at;
      }
      let runs = turns.get(turnId);
      if (!runs) {
        if (turns.size >= MAX_TURNS) turns.delete(turns.keys().next().value!);
        runs = new Map();
        turns.set(turnId, runs);
      }
      const key = runKey(event);
      const before = runs.get(key);
      runs.set(key, { step, messages });
      if (!before) return event;
      const keep = sharedPrefix(before.messages, messages);
      if (keep === 0) return event;
      return { ...event, messages: messages.slice(keep), promptFrom: { step: before.step, keep } };
    },
    ended(event) {
      if (typeof event.turnId !== 'string') return;
      // A turn paused for an approval (pending) may resume days later: it starts again with a whole prompt.
      if (event.type === 'turn_end' || (event.type === 'approval' && event.status === 'pending')) turns.delete(event.turnId);
      else if (event.type === 'subagent') turns.get(event.turnId)?.delete(runKey({ agent: event.agent, parentCallId: event.callId }));
    },
    reset() {
      turns.clear();
    },
  };
}

/** A model_call as a reader gets it back: `promptIncomplete` when the earlier messages it refers to were not found (a lost line). */
type Joinable = { type?: unknown; turnId?: unknown; step?: unknown; messages?: unknown; promptFrom?: unknown; agent?: unknown; parentCallId?: unknown };

/**
 * The reader's side: hand it a file's records in order (any records; only model calls change) and
 * it returns each model call with its whole prompt in `messages` and no `promptFrom`. When the
 * referenced call is missing, `messages` holds only what the line has and `promptIncomplete` is set.
 */
export function createPromptJoiner(): <R extends Joinable>(record: R) => R {
  const turns = new Map<string, Map<string, Prompt>>();
  return (record) => {
    if (record.type === 'turn_end' && typeof record.turnId === 'string') {
      turns.delete(record.turnId);
      return record;
    }
    if (record.type !== 'model_call' || typeof record.turnId !== 'string' || !Array.isArray(record.messages)) return record;
    let runs = turns.get(record.turnId);
    if (!runs) {
      if (turns.size >= MAX_TURNS) turns.delete(turns.keys().next().value!);
      runs = new Map();
      turns.set(record.turnId, runs);
    }
    const key = runKey(record);
    const step = typeof record.step === 'number' ? record.step : -1;
    const from = record.promptFrom as Partial<PromptFrom> | undefined;
    if (from === undefined) {
      runs.set(key, { step, messages: record.messages });
      return record;
    }
    const before = runs.get(key);
    const { promptFrom: _from, ...rest } = record;
    if (!before || before.step !== from.step || typeof from.keep !== 'number' || from.keep > before.messages.length) {
      runs.delete(key);
      return { ...rest, promptIncomplete: true } as unknown as typeof record;
    }
    const messages = before.messages.slice(0, from.keep).concat(record.messages);
    runs.set(key, { step, messages });
    return { ...rest, messages } as typeof record;
  };
}

/** Records of one file (or of one turn, in the order they were written), each model call with its whole prompt. */
export function joinPrompts<R extends Joinable>(records: readonly R[]): R[] {
  const join = createPromptJoiner();
  return records.map((r) => join(r));
}
