import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/basics/log.js';
import { chunkMarkdown } from '../../src/basics/text/chunk-markdown.js';
import { createEditedAnswer, type EditedMessageOps, type MessageRole } from '../../src/gateway/edited-answer.js';
import { ManualClock } from '../reminders/manual-clock.js';

interface Op {
  kind: 'post' | 'edit' | 'remove';
  ref: number;
  text?: string;
  role?: MessageRole;
  at: number;
}

function harness(limit = 2000, intervalMs = 1000) {
  const clock = new ManualClock(0);
  const ops: Op[] = [];
  let next = 0;
  let failEdits = 0;
  const platform: EditedMessageOps<number> = {
    post: async (text, role) => {
      const ref = next++;
      ops.push({ kind: 'post', ref, text, role, at: clock.now() });
      return ref;
    },
    edit: async (ref, text, role) => {
      if (failEdits > 0) {
        failEdits -= 1;
        throw new Error('edit refused');
      }
      ops.push({ kind: 'edit', ref, text, role, at: clock.now() });
    },
    remove: async (ref) => void ops.push({ kind: 'remove', ref, at: clock.now() }),
  };
  const answer = createEditedAnswer(platform, {
    split: (md, final) => chunkMarkdown(md, { limit, partMarkers: final }),
    progressLine: (note) => `_${note}_`,
    intervalMs,
    clock,
    log: createLogger('silent'),
  });
  /** Lets the answer's awaited platform calls finish (no time passes on the manual clock). */
  const drain = async () => {
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  return { clock, ops, answer, drain, failNextEdits: (n: number) => void (failEdits = n) };
}

describe('an answer written by editing one message', () => {
  it('a stopped answer keeps its text, ends with the note, and its live message loses the Stop role', async () => {
    const h = harness();
    h.answer.append('Half of it');
    h.answer.progress('running fetch_url');
    h.clock.advance(0);
    await h.drain();
    await h.answer.end('_Stopped by <@U1>._');
    expect(h.ops.at(-1)).toMatchObject({ kind: 'edit', ref: 0, text: 'Half of it\n\n_Stopped by <@U1>._', role: 'part' });
  });

  it('an answer stopped before it showed anything posts nothing', async () => {
    const h = harness();
    await h.answer.end('_Stopped by <@U1>._');
    expect(h.ops).toEqual([]);
  });

  it('posts the first text at once, then edits at most once per interval, and the final edit has the whole answer', async () => {
    const h = harness();
    h.answer.append('Hello');
    h.clock.advance(0);
    await h.drain();
    expect(h.ops).toEqual([{ kind: 'post', ref: 0, text: 'Hello', role: 'live', at: 0 }]);
    for (let i = 0; i < 20; i++) {
      h.answer.append(` w${i}`);
      h.clock.advance(100);
      await h.drain();
    }
    const edits = h.ops.filter((o) => o.kind === 'edit');
    expect(edits.length).toBeGreaterThanOrEqual(1);
    expect(edits.length).toBeLessThanOrEqual(2);
    for (let i = 1; i < h.ops.length; i++) expect(h.ops[i]!.at - h.ops[i - 1]!.at).toBeGreaterThanOrEqual(1000);
    await h.answer.finish(`Hello${Array.from({ length: 20 }, (_, i) => ` w${i}`).join('')}`);
    const last = h.ops.at(-1)!;
    expect(last).toMatchObject({ kind: 'edit', ref: 0, role: 'final' });
    expect(last.text).toContain('w19');
    expect(h.answer.started).toBe(true);
  });

  it('shows a progress line while the turn runs and drops it from the final message', async () => {
    const h = harness();
    h.answer.append('Looking.');
    h.answer.progress('running fetch_url');
    h.clock.advance(0);
    await h.drain();
    expect(h.ops[0]!.text).toBe('Looking.\n\n_running fetch_url_');
    await h.answer.finish('Looking.\n\nFound it.');
    expect(h.ops.at(-1)).toMatchObject({ kind: 'edit', text: 'Looking.\n\nFound it.', role: 'final' });
  });

  it('continues a long answer in new messages without losing text, part markers only at the end', async () => {
    const h = harness(100, 1000);
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`);
    for (const w of words) {
      h.answer.append(`${w} `);
      h.clock.advance(300);
      await h.drain();
    }
    const during = h.ops.filter((o) => o.kind === 'post').map((o) => o.text!);
    expect(during.length).toBeGreaterThan(1);
    expect(during.join('')).not.toMatch(/\(\d+\/\d+\)/);
    const full = words.join(' ');
    await h.answer.finish(full);
    const byRef = new Map<number, string>();
    for (const o of h.ops) if (o.text !== undefined) byRef.set(o.ref, o.text);
    const finalParts = [...byRef.values()];
    for (const w of words) expect(finalParts.some((p) => p.includes(w))).toBe(true);
    for (const p of finalParts) expect(p.length).toBeLessThanOrEqual(100);
    expect(h.ops.filter((o) => o.role === 'final')).toHaveLength(1);
  });

  it('shows the revised text when the final answer does not extend what was streamed, removing parts it no longer needs', async () => {
    const h = harness(50);
    h.answer.append('reasoning that was not meant to be shown at all, long enough for two parts');
    h.clock.advance(0);
    await h.drain();
    await h.answer.finish('Short.');
    expect(h.ops.find((o) => o.kind === 'edit' && o.ref === 0)).toMatchObject({ text: 'Short.', role: 'final' });
    expect(h.ops.some((o) => o.kind === 'remove' && o.ref === 1)).toBe(true);
  });

  it('tries again at the next update after a failed edit', async () => {
    const h = harness();
    h.answer.append('a');
    h.clock.advance(0);
    await h.drain();
    h.failNextEdits(1);
    h.answer.append('b');
    h.clock.advance(1000);
    await h.drain();
    h.answer.append('c');
    h.clock.advance(1000);
    await h.drain();
    expect(h.ops.at(-1)).toMatchObject({ kind: 'edit', text: 'abc' });
  });

  it('an ended turn leaves the text without progress or buttons; one that showed nothing posts nothing', async () => {
    const h = harness();
    h.answer.append('Partial');
    h.answer.progress('running x');
    h.clock.advance(0);
    await h.drain();
    await h.answer.end();
    expect(h.ops.at(-1)).toMatchObject({ kind: 'edit', text: 'Partial', role: 'part' });
    const quiet = harness();
    await quiet.answer.end();
    expect(quiet.ops).toEqual([]);
    expect(quiet.answer.started).toBe(false);
  });
});
