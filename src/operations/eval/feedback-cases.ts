import { readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import type { FeedbackReader, FeedbackVote } from '../../state/feedback/feedback-store.js';
import { evalCaseSchema, parseCaseFile, type EvalCase } from './case-schema.js';
import { readTraceEvents, type TracedEvent } from './trace-reader.js';

/**
 * `npm run eval -- --from-feedback`: every turn someone voted 👎 becomes an eval case in
 * evals/from-feedback.yaml (tag `from-feedback`), which the ordinary `npm run eval` then runs.
 *
 * A case holds what the trace kept: the request (turn_start text) as its message, and as its one
 * check that the answer people turned down is not given again (`answer.none` with the answer's
 * first line). That check is a start, not the judgement: the description quotes the answer and
 * names the voters, so whoever reviews the case can write what a good answer must contain. Cases
 * already in the file are kept as they are (edited expectations are never overwritten); a turn
 * whose trace is gone is reported and skipped.
 */
export const FEEDBACK_TAG = 'from-feedback';
export const DEFAULT_FEEDBACK_FILE = path.join('evals', 'from-feedback.yaml');
/** Most turns one export reads (newest first). */
const MAX_TURNS = 200;
/** How much of the turned-down answer the check and the description quote. */
const QUOTE_CHARS = 120;
const DESCRIPTION_ANSWER_CHARS = 600;

export interface TurnRecord {
  turnId: string;
  request: string;
  /** The main agent's final answer as the trace holds it ('' when the turn ended without one). */
  answer: string;
}

/** The request and final answer of each wanted turn, from the trace records. */
export function turnRecords(events: TracedEvent[], wanted: ReadonlySet<string>): Map<string, TurnRecord> {
  const out = new Map<string, TurnRecord>();
  for (const e of events) {
    if (!wanted.has(e.turnId ?? '')) continue;
    if (e.type === 'turn_start') out.set(e.turnId, { turnId: e.turnId, request: e.text, answer: out.get(e.turnId)?.answer ?? '' });
    if (e.type === 'model_call' && e.agent === undefined && e.response && !(e.response.toolCalls?.length) && typeof e.response.content === 'string' && e.response.content.trim()) {
      const known = out.get(e.turnId);
      out.set(e.turnId, { turnId: e.turnId, request: known?.request ?? '', answer: e.response.content });
    }
  }
  return out;
}

const oneLine = (s: string, max: number) => {
  const line = s.trim().split('\n')[0]!.trim();
  return line.length > max ? line.slice(0, max) : line;
};

/** The case for one turned-down turn (undefined when the trace kept no request to replay). */
export function caseFromTurn(turn: TurnRecord, votes: FeedbackVote[]): EvalCase | undefined {
  if (!turn.request.trim()) return undefined;
  const down = votes.filter((v) => v.vote === 'down');
  const when = new Date(Math.max(...down.map((v) => v.votedAt))).toISOString();
  const quoted = turn.answer.length > DESCRIPTION_ANSWER_CHARS ? `${turn.answer.slice(0, DESCRIPTION_ANSWER_CHARS)}…` : turn.answer;
  const firstLine = oneLine(turn.answer, QUOTE_CHARS);
  const raw = {
    name: `feedback-${turn.turnId.toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 12)}`,
    description: [
      `Turn ${turn.turnId}, voted down by ${down.map((v) => v.voter).join(', ')} (latest ${when}).`,
      turn.answer ? `The answer then was:\n${quoted}` : 'The turn ended without an answer.',
      'Review: replace or extend expect with what a good answer must contain.',
    ].join('\n'),
    tags: [FEEDBACK_TAG],
    messages: [turn.request],
    expect: firstLine ? { answer: { none: [firstLine] } } : {},
  };
  return evalCaseSchema.parse(raw);
}

export interface ExportResult {
  file: string;
  added: string[];
  kept: number;
  /** Turned-down turns with no trace left (or no request in it). */
  missing: string[];
}

export async function exportFeedbackCases(opts: { reader: FeedbackReader; tracesDir: string; file: string; window: { since: number; until: number } }): Promise<ExportResult> {
  const turns = await opts.reader.downVoted(opts.window, MAX_TURNS);
  const records = turnRecords(await readTraceEvents(opts.tracesDir), new Set(turns.map((t) => t.turnId)));
  let existing: EvalCase[] = [];
  try {
    existing = parseCaseFile(await readFile(opts.file, 'utf8'), opts.file);
  } catch (err) {
    // A file that is not there yet is started; one that does not parse is the person's to fix.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const names = new Set(existing.map((c) => c.name));
  const added: EvalCase[] = [];
  const missing: string[] = [];
  for (const t of turns) {
    const record = records.get(t.turnId);
    const made = record && caseFromTurn(record, t.votes);
    if (!made) {
      missing.push(t.turnId);
      continue;
    }
    if (names.has(made.name)) continue;
    names.add(made.name);
    added.push(made);
  }
  if (added.length > 0) {
    await mkdir(path.dirname(opts.file), { recursive: true });
    const header = '# Written by `npm run eval -- --from-feedback`: answers people voted down. Edit the expectations; reruns keep your edits.\n';
    await writeFile(opts.file, header + stringify([...existing, ...added].map(withoutDefaults), { lineWidth: 0 }));
  }
  return { file: opts.file, added: added.map((c) => c.name), kept: existing.length, missing };
}

/** A case as written: the schema's defaults (empty approvals, pages) left out. */
function withoutDefaults(c: EvalCase): Record<string, unknown> {
  const { approvals, environment, conversation, ...rest } = c;
  return {
    ...rest,
    ...(conversation !== 'dm' && { conversation }),
    ...(approvals.length > 0 && { approvals }),
    ...((Object.keys(environment.pages).length > 0 || environment.clock || environment.timezone || environment.sink) && { environment }),
  };
}
