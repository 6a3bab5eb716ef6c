import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { calculator } from '../../tools/calculator.js';
import { getCurrentTime } from '../../tools/get-current-time.js';
import { parseTraceLine } from '../../src/runtime/trace/trace-schema.js';
import { formatStats, summarise } from '../../src/operations/stats/trace-stats.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const lastUserText = (body: { messages: Array<{ role: string; content?: unknown }> }) => String(body.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');

async function traceRecords(hh: Harness) {
  await hh.core.gateway.idle();
  const dir = path.join(hh.dataDir, 'traces');
  const lines = (await Promise.all((await readdir(dir)).map((f) => readFile(path.join(dir, f), 'utf8')))).join('').trim().split('\n');
  return lines.map((l) => parseTraceLine(l)!);
}

describe('grounding check (real openai SDK, fake model server)', () => {
  it('sends an answer with a figure no tool gave back once, and the second answer reaches the person', async () => {
    h = await startHarness({ tools: [calculator, getCurrentTime] });
    h.fake.enqueue({ text: 'Bitcoin is at $97,412.50 right now.' }, { text: 'From memory, and possibly out of date: around $97,000. I have no live price tool here.' });
    await h.core.gateway.handleMessage({ id: 'g1', conversation: conv('D1', { isDm: true }), speaker: user('U1'), text: 'what is bitcoin at?', mentioned: false });
    const answer = await h.port.waitFor(isText);
    expect(answer.text).toMatch(/^From memory/);
    expect(h.fake.requests).toHaveLength(2);
    const note = lastUserText(h.fake.requests[1]!);
    expect(note).toMatch(/^\[system note\] Your answer states "\$97,412\.50", which no tool gave you/);
    // The note is model-facing only: the person never saw the first answer.
    expect(h.port.texts().join('\n')).not.toContain('97,412.50');

    const records = await traceRecords(h);
    const calls = records.filter((r) => r.type === 'model_call');
    expect(calls.map((c) => (c.type === 'model_call' ? c.grounding?.claims : undefined))).toEqual([['$97,412.50'], undefined]);
    expect(records.find((r) => r.type === 'turn_end')).toMatchObject({ outcome: 'answered', steps: 2 });
    const stats = summarise(records);
    expect(stats.groundingChecks).toBe(1);
    expect(formatStats(stats)).toContain('Grounding checks: 1 answer asked again for figures no tool gave');
  });

  it('leaves answers alone when a tool gave the figure, the user wrote it, or HERMES_GROUNDING=off', { timeout: 120_000 }, async () => {
    h = await startHarness({ tools: [calculator] });
    h.fake.enqueue({ toolCalls: [{ id: 'c1', name: 'calculator', arguments: { expression: '17 * 23' } }] }, { text: '17 * 23 = 391.' });
    await h.core.gateway.handleMessage({ id: 'g2', conversation: conv('D1', { isDm: true }), speaker: user('U1'), text: 'what is 17 * 23?', mentioned: false });
    // The calculator's first run starts its sandbox: slow on a busy machine.
    await h.port.waitFor(isText, 60_000);
    h.fake.enqueue({ text: 'Yes, 1,024 is 2^10.' });
    await h.core.gateway.handleMessage({ id: 'g3', conversation: conv('D2', { isDm: true }), speaker: user('U1'), text: 'is 1024 two to the tenth?', mentioned: false });
    await h.port.waitForCount(isText, 2, 30_000);
    expect(h.fake.requests).toHaveLength(3);

    await h.restart({ HERMES_GROUNDING: 'off' });
    h.fake.enqueue({ text: 'Bitcoin is at $97,412.50 right now.' });
    await h.core.gateway.handleMessage({ id: 'g4', conversation: conv('D3', { isDm: true }), speaker: user('U1'), text: 'what is bitcoin at?', mentioned: false });
    const off = await h.port.waitFor(isText);
    expect(off.text).toBe('Bitcoin is at $97,412.50 right now.');
    expect(h.fake.requests).toHaveLength(4);
    expect((await traceRecords(h)).some((r) => r.type === 'model_call' && r.grounding)).toBe(false);
  });
});
