import { randomBytes } from 'node:crypto';
import type { ToolCall } from '../../basics/types.js';
import { blankToNull, isRecord } from '../../basics/values.js';

/**
 * Reading tool calls that models write as text instead of native `tool_calls`:
 * - Hermes-family `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks (Hermes, Qwen on a
 *   server without a tool parser);
 * - JSON-mode answers `{"thought", "action", "action_input"}` / `{"thought", "final_answer"}`,
 *   often wrapped in code fences or prose.
 * What is unambiguous becomes a ToolCall; what is not becomes a sentence in `parseErrors` that the
 * loop shows the model, so it can correct itself. Nothing here throws. Argument values are left as
 * the model wrote them ("3" stays a string): coercion belongs to the executor, which knows the schema.
 */

export interface TextToolParse {
  /** Text meant for the reader, with parsed markup removed; null when nothing is left. */
  content: string | null;
  toolCalls: ToolCall[];
  parseErrors: string[];
}

export type IdFactory = () => string;

export const newCallId: IdFactory = () => `call_${randomBytes(9).toString('hex')}`;

const CALL_FORMAT = '<tool_call>{"name": "<tool name>", "arguments": {...}}</tool_call>';
const JSON_FORMAT = '{"thought": "...", "action": "<tool name>", "action_input": {...}} or {"thought": "...", "final_answer": "..."}';
/** Bounds work on hostile or runaway output. */
const MAX_BLOCKS = 32;

/**
 * Arguments as a JSON text. Some models encode the arguments object twice (a JSON string whose
 * content is JSON); that is unwrapped. Text that is not JSON is returned unchanged so the executor
 * can answer "not valid JSON" with the model's own text in view.
 */
export function normalizeArgumentsText(raw: string): string {
  let text = raw.trim();
  if (text === '') return '{}';
  for (let depth = 0; depth < 3; depth++) {
    const parsed = tryParse(text);
    if (!parsed.ok || typeof parsed.value !== 'string') return text;
    const inner = parsed.value.trim();
    if (!tryParse(inner).ok) return text;
    text = inner;
  }
  return text;
}

/** Arguments given as any JSON value (object, string, missing) → JSON text. */
export function encodeArguments(value: unknown): string {
  if (value === undefined || value === null) return '{}';
  if (typeof value === 'string') return normalizeArgumentsText(value);
  return JSON.stringify(value);
}

/** Removes `<think>…</think>` reasoning some models (Qwen3, DeepSeek-R1) put before the answer. */
export function stripThinking(text: string): string {
  return text.replace(/<think>[\s\S]*?<\/think>/g, '').replace(/^[\s\S]*?<\/think>/, '');
}

export function hasHermesToolCalls(text: string): boolean {
  return text.includes('<tool_call>');
}

/** Parses `<tool_call>` blocks; an unclosed last block (the model stopped early) is read too. */
export function parseHermesToolCalls(text: string, newId: IdFactory = newCallId): TextToolParse {
  const toolCalls: ToolCall[] = [];
  const parseErrors: string[] = [];
  const kept: string[] = [];
  const pattern = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;
  let last = 0;
  let n = 0;
  for (let m = pattern.exec(text); m !== null && n < MAX_BLOCKS; m = pattern.exec(text)) {
    n += 1;
    kept.push(text.slice(last, m.index));
    last = m.index + m[0].length;
    const block = readHermesBlock(m[1] ?? '', n, newId);
    if ('error' in block) {
      parseErrors.push(block.error);
      kept.push(m[0]); // leave what could not be read in view, so the model sees its mistake
    } else {
      toolCalls.push(...block.calls);
    }
  }
  kept.push(text.slice(last));
  return { content: blankToNull(kept.join('')), toolCalls, parseErrors };
}

function readHermesBlock(body: string, n: number, newId: IdFactory): { calls: ToolCall[] } | { error: string } {
  const inner = unfence(body.trim());
  const parsed = tryParse(inner);
  if (!parsed.ok) {
    return { error: `<tool_call> block ${n} is not valid JSON (${parsed.error}). Write it as ${CALL_FORMAT}.` };
  }
  const items = Array.isArray(parsed.value) ? parsed.value : [parsed.value];
  const calls: ToolCall[] = [];
  for (const item of items.slice(0, MAX_BLOCKS)) {
    if (!isRecord(item) || typeof item.name !== 'string' || item.name.trim() === '') {
      return { error: `<tool_call> block ${n} has no "name" string. Write it as ${CALL_FORMAT}.` };
    }
    calls.push({ id: newId(), name: item.name.trim(), arguments: encodeArguments(item.arguments ?? item.parameters) });
  }
  return { calls };
}

/**
 * Some models without a tool parser on the server (Llama 3.x) answer with a bare
 * `{"name": …, "parameters": …}` object. That is read as a call only when the whole answer is such
 * JSON (fences allowed) and every name is a tool offered in this request; otherwise it may be a
 * user-facing answer that happens to be JSON, and null is returned.
 */
export function parseBareJsonToolCalls(text: string, toolNames: ReadonlySet<string>, newId: IdFactory = newCallId): TextToolParse | null {
  const body = unfence(text.trim());
  // Only an object or a list can be a call. Every prose answer used to go through JSON.parse and
  // come back as a thrown SyntaxError, which costs more than the rest of reading the response.
  if (body[0] !== '{' && body[0] !== '[') return null;
  const parsed = tryParse(body);
  if (!parsed.ok) return null;
  const items = Array.isArray(parsed.value) ? parsed.value : [parsed.value];
  if (items.length === 0 || items.length > MAX_BLOCKS) return null;
  const toolCalls: ToolCall[] = [];
  for (const item of items) {
    const call = bareCall(item, toolNames, newId);
    if (!call) return null;
    toolCalls.push(call);
  }
  return { content: null, toolCalls, parseErrors: [] };
}

function bareCall(item: unknown, toolNames: ReadonlySet<string>, newId: IdFactory): ToolCall | undefined {
  if (!isRecord(item) || typeof item.name !== 'string' || !toolNames.has(item.name)) return undefined;
  const args = item.arguments ?? item.parameters;
  if (args !== undefined && typeof args !== 'string' && !isRecord(args)) return undefined;
  return { id: newId(), name: item.name, arguments: encodeArguments(args) };
}

/**
 * Reads a JSON-mode answer. Every top-level JSON object in the text is a candidate (code fences
 * and prose around it do not matter). Objects with "action" become tool calls; one with
 * "final_answer" is the answer; text with neither is taken as a plain-prose final answer, unless
 * it clearly tried to be an action and is malformed. A `{"name", "arguments"}` object naming an
 * offered tool counts as an action too (models trained on native calling drift into it).
 */
export function parseJsonModeAnswer(text: string, newId: IdFactory = newCallId, toolNames: ReadonlySet<string> = new Set()): TextToolParse {
  const cleaned = stripThinking(text);
  if (hasHermesToolCalls(cleaned)) {
    const hermes = parseHermesToolCalls(cleaned, newId);
    if (hermes.toolCalls.length > 0 || hermes.parseErrors.length > 0) return hermes;
  }
  const toolCalls: ToolCall[] = [];
  const parseErrors: string[] = [];
  let finalAnswer: string | undefined;
  for (const candidate of topLevelObjects(cleaned)) {
    const parsed = tryParse(candidate);
    if (!parsed.ok) {
      if (looksLikeAction(candidate)) {
        parseErrors.push(`Your JSON is not valid (${parsed.error}). Answer with exactly one JSON object: ${JSON_FORMAT}.`);
      }
      continue;
    }
    if (!isRecord(parsed.value)) continue;
    const v = parsed.value;
    const hasFinal = v.final_answer !== undefined && v.final_answer !== null && v.final_answer !== '';
    const action = typeof v.action === 'string' ? v.action.trim() : v.action;
    const bare = action === undefined ? bareCall(v, toolNames, newId) : undefined;
    if (bare) {
      toolCalls.push(bare);
    } else if (isFinalAction(action)) {
      finalAnswer ??= asText(v.action_input ?? v.final_answer);
    } else if (typeof action === 'string' && action !== '') {
      if (hasFinal) {
        parseErrors.push(`Your JSON has both "action" and "final_answer"; send either a tool call or a final answer: ${JSON_FORMAT}.`);
        continue;
      }
      toolCalls.push({ id: newId(), name: action, arguments: encodeArguments(v.action_input) });
    } else if (hasFinal) {
      finalAnswer ??= asText(v.final_answer);
    } else if (action !== undefined && action !== null && action !== '') {
      parseErrors.push(`"action" must be the name of a tool as a string, got ${JSON.stringify(action)}. Answer with ${JSON_FORMAT}.`);
    }
    if (toolCalls.length >= MAX_BLOCKS) break;
  }
  if (toolCalls.length > 0) return { content: null, toolCalls, parseErrors };
  if (parseErrors.length > 0) return { content: blankToNull(cleaned), toolCalls, parseErrors };
  if (finalAnswer !== undefined) return { content: blankToNull(finalAnswer), toolCalls, parseErrors };
  return { content: blankToNull(cleaned), toolCalls, parseErrors };
}

/** LangChain-style prompts teach `"action": "Final Answer"`; models trained on them still say it. */
function isFinalAction(action: unknown): boolean {
  return typeof action === 'string' && /^final[ _]?answer$/i.test(action);
}

function looksLikeAction(candidate: string): boolean {
  return /["']?(action|action_input|final_answer)["']?\s*:/.test(candidate);
}

/**
 * Balanced `{…}` spans at nesting depth 0, string-aware so braces inside JSON strings do not
 * count. An object left open at the end of the text is still returned (so it is reported as
 * malformed rather than silently treated as prose).
 */
export function topLevelObjects(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length && out.length < MAX_BLOCKS; i++) {
    const ch = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"' && depth > 0) inString = true;
    else if (ch === '{') {
      if (depth === 0) start = i;
      depth += 1;
    } else if (ch === '}' && depth > 0) {
      depth -= 1;
      if (depth === 0) out.push(text.slice(start, i + 1));
    }
  }
  if (depth > 0 && start >= 0 && out.length < MAX_BLOCKS) out.push(text.slice(start));
  return out;
}

function unfence(text: string): string {
  const m = /^```[a-zA-Z]*\s*([\s\S]*?)\s*```$/.exec(text);
  return m ? (m[1] ?? '') : text;
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

function asText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v) ?? '';
}
