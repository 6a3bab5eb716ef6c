import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Generated trace files in the tracer's format (one JSON object per line, day files): two users,
 * three turns today, one two days ago, a model timeout, a refused fetch, three refused requests
 * (HERMES_ALLOW, HERMES_USER_RATE), and a torn last line.
 */
export const NOW = Date.parse('2026-03-14T12:00:00Z');

const ev = (ts: string, e: Record<string, unknown>) => JSON.stringify({ ts, ...e });

export async function writeTraceFixtures(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-stats-'));
  const old = [
    ev('2026-03-12T08:00:00.000Z', { type: 'turn_start', turnId: 'old', sessionId: 's0', platform: 'slack', userKey: 'slack:T1:U1', text: 'hi' }),
    ev('2026-03-12T08:00:01.000Z', { type: 'model_call', turnId: 'old', step: 1, model: 'm', messages: [], tools: [], response: {}, usage: { promptTokens: 1000, completionTokens: 100 }, latencyMs: 900 }),
    ev('2026-03-12T08:00:02.000Z', { type: 'turn_end', turnId: 'old', outcome: 'answered', steps: 1, durationMs: 900, promptTokens: 1000, completionTokens: 100 }),
  ];
  const today = [
    ev('2026-03-14T09:00:00.000Z', { type: 'turn_start', turnId: 'a', sessionId: 's1', platform: 'slack', userKey: 'slack:T1:U1', text: 'what is 2+2' }),
    ev('2026-03-14T09:00:01.000Z', { type: 'model_call', turnId: 'a', step: 1, model: 'm', messages: [], tools: ['calculator'], response: {}, usage: { promptTokens: 100, completionTokens: 10 }, latencyMs: 100 }),
    ev('2026-03-14T09:00:01.100Z', { type: 'tool_call', turnId: 'a', callId: 'c1', name: 'calculator', args: {}, ok: true, result: '4', durationMs: 5 }),
    ev('2026-03-14T09:00:02.000Z', { type: 'model_call', turnId: 'a', step: 2, model: 'm', messages: [], tools: ['calculator'], response: {}, usage: { promptTokens: 200, completionTokens: 10 }, latencyMs: 200 }),
    ev('2026-03-14T09:00:02.100Z', { type: 'turn_end', turnId: 'a', outcome: 'answered', steps: 2, durationMs: 400, promptTokens: 300, completionTokens: 20 }),
    ev('2026-03-14T10:00:00.000Z', { type: 'turn_start', turnId: 'b', sessionId: 's2', platform: 'discord', userKey: 'discord:G1:U2', text: 'hello' }),
    ev('2026-03-14T10:01:00.000Z', { type: 'model_call', turnId: 'b', step: 1, model: 'm', messages: [], tools: [], response: null, latencyMs: 60000, error: 'timeout: no answer' }),
    ev('2026-03-14T10:01:00.100Z', { type: 'turn_end', turnId: 'b', outcome: 'model_error:timeout', steps: 1, durationMs: 60000, promptTokens: 0, completionTokens: 0 }),
    ev('2026-03-14T11:00:00.000Z', { type: 'turn_start', turnId: 'c', sessionId: 's1', platform: 'slack', userKey: 'slack:T1:U1', text: 'read the page' }),
    ev('2026-03-14T11:00:01.000Z', { type: 'model_call', turnId: 'c', step: 1, model: 'm', messages: [], tools: ['fetch_url'], response: {}, usage: { promptTokens: 300, completionTokens: 30 }, latencyMs: 300 }),
    ev('2026-03-14T11:00:01.050Z', { type: 'tool_call', turnId: 'c', callId: 'c2', name: 'fetch_url', args: {}, ok: false, result: 'refused', durationMs: 50, errorKind: 'refused' }),
    ev('2026-03-14T11:00:02.000Z', { type: 'model_call', turnId: 'c', step: 2, model: 'm', messages: [], tools: ['fetch_url'], response: {}, usage: { promptTokens: 400, completionTokens: 30 }, latencyMs: 400 }),
    ev('2026-03-14T11:00:02.150Z', { type: 'tool_call', turnId: 'c', callId: 'c3', name: 'fetch_url', args: {}, ok: true, result: 'page', durationMs: 150 }),
    ev('2026-03-14T11:00:03.000Z', { type: 'model_call', turnId: 'c', step: 3, model: 'm', messages: [], tools: ['fetch_url'], response: {}, usage: { promptTokens: 500, completionTokens: 40 }, latencyMs: 500 }),
    ev('2026-03-14T11:00:03.100Z', { type: 'turn_end', turnId: 'c', outcome: 'answered', steps: 3, durationMs: 1500, promptTokens: 1200, completionTokens: 100 }),
    ev('2026-03-14T11:10:00.000Z', { type: 'refusal', reason: 'not_allowed', source: 'message', platform: 'slack', userKey: 'slack:T1:U3' }),
    ev('2026-03-14T11:10:05.000Z', { type: 'refusal', reason: 'not_allowed', source: 'command', platform: 'slack', userKey: 'slack:T1:U3' }),
    ev('2026-03-14T11:20:00.000Z', { type: 'refusal', reason: 'rate_limit', source: 'message', platform: 'slack', userKey: 'slack:T1:U1' }),
  ];
  await writeFile(path.join(dir, '2026-03-12.jsonl'), old.join('\n') + '\n');
  // A crash mid-write leaves a torn last line; it must be skipped, not fail the stats.
  await writeFile(path.join(dir, '2026-03-14.jsonl'), today.join('\n') + '\n{"ts":"2026-03-14T11:30:00.000Z","type":"tool_ca');
  await writeFile(path.join(dir, 'notes.txt'), 'not a trace');
  return dir;
}
