import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NetRefusedError } from '../../src/capabilities/net/net-client.js';
import { ToolExecutor, type PreparedCall, type Ready } from '../../src/capabilities/toolkit/executor.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { defineTool, type AnyTool } from '../../src/capabilities/toolkit/tool-api.js';
import type { Config } from '../../src/settings/config.js';
import { makeToolContext } from './context-helper.js';

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

function setup(tools: AnyTool[], config: Config['tools'] = {}, opts: { defaultTimeoutMs?: number; defaultMaxResultChars?: number } = {}) {
  const registry = new ToolRegistry(config);
  for (const t of tools) registry.register(t);
  const executor = new ToolExecutor({ registry, defaultTimeoutMs: opts.defaultTimeoutMs ?? 2000, defaultMaxResultChars: opts.defaultMaxResultChars });
  const prep = (name: string, args: object = {}, id = `call_${name}`): Ready => {
    const p: PreparedCall = executor.prepareCall({ id, name, arguments: JSON.stringify(args) }, { isAdmin: false });
    if (p.kind !== 'ready') throw new Error(p.outcome.content);
    return p;
  };
  return { executor, prep };
}

const tool = (name: string, run: AnyTool['run'], extra: Partial<AnyTool> = {}) =>
  defineTool({ name, description: name, input: z.object({ ms: z.number().optional(), text: z.string().optional() }), run, ...extra });

describe('ToolExecutor.runPrepared', () => {
  it('returns the tool text with the call id, args and duration', async () => {
    const { executor, prep } = setup([tool('echo', async (a) => `got ${a.text}`)]);
    const o = await executor.runPrepared(prep('echo', { text: 'hi' }), makeToolContext());
    expect(o).toMatchObject({ callId: 'call_echo', name: 'echo', ok: true, content: 'got hi', args: { text: 'hi' } });
    expect(o.errorKind).toBeUndefined();
    expect(o.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('reports a throw as its message, without a stack', async () => {
    const { executor, prep } = setup([tool('boom', async () => { throw new Error('disk is full'); })]);
    const o = await executor.runPrepared(prep('boom'), makeToolContext());
    expect(o).toMatchObject({ ok: false, errorKind: 'failed', content: 'boom failed: disk is full' });
  });

  it('reports a synchronous throw and a non-Error throw too', async () => {
    const { executor, prep } = setup([
      tool('sync', (() => { throw new TypeError('bad'); }) as AnyTool['run']),
      tool('str', async () => { throw 'plain string'; }),
    ]);
    expect((await executor.runPrepared(prep('sync'), makeToolContext())).content).toBe('sync failed: bad');
    expect((await executor.runPrepared(prep('str'), makeToolContext())).content).toBe('str failed: plain string');
  });

  it('reports a network refusal as refused, in the refusal\'s own words', async () => {
    const { executor, prep } = setup([tool('fetchy', async () => { throw new NetRefusedError('refused: 10.0.0.1 is a private address'); })]);
    const o = await executor.runPrepared(prep('fetchy'), makeToolContext());
    expect(o).toMatchObject({ ok: false, errorKind: 'refused', content: 'refused: 10.0.0.1 is a private address' });
  });

  it('aborts a tool over its time limit through its signal and reports a timeout', async () => {
    let toolSignal: AbortSignal | undefined;
    const slow = tool('slow', async (_a, ctx) => {
      toolSignal = ctx.signal;
      await sleep(5000, ctx.signal);
      return 'late';
    });
    const { executor, prep } = setup([slow], { slow: { timeoutMs: 50 } });
    const started = Date.now();
    const o = await executor.runPrepared(prep('slow'), makeToolContext());
    expect(Date.now() - started).toBeLessThan(2000);
    expect(o).toMatchObject({ ok: false, errorKind: 'timeout' });
    expect(o.content).toBe('slow timed out after 50 ms and was aborted. It produced no result.');
    expect(toolSignal?.aborted).toBe(true);
  });

  it('says the outcome is unknown when a tool with side effects times out, even if it ignores its signal', async () => {
    const stubborn = tool('send', async () => { await sleep(300); return 'sent'; }, { sideEffects: true, timeoutMs: 40 });
    const { executor, prep } = setup([stubborn]);
    const o = await executor.runPrepared(prep('send'), makeToolContext());
    expect(o.errorKind).toBe('timeout');
    expect(o.content).toContain('send timed out after 40 ms');
    expect(o.content).toContain('outcome is unknown');
  });

  it('uses the executor default timeout when neither config nor tool sets one', async () => {
    const { executor, prep } = setup([tool('slow', async (_a, ctx) => { await sleep(5000, ctx.signal); return 'x'; })], {}, { defaultTimeoutMs: 30 });
    expect((await executor.runPrepared(prep('slow'), makeToolContext())).content).toContain('after 30 ms');
  });

  it('stops when the turn is cancelled, and does not start once it already is', async () => {
    let began!: () => void;
    const running = new Promise<void>((r) => (began = r));
    const { executor, prep } = setup([tool('slow', async (_a, ctx) => { began(); await sleep(5000, ctx.signal); return 'x'; }, { sideEffects: true })]);
    const stop = new AbortController();
    const run = executor.runPrepared(prep('slow'), makeToolContext({ signal: stop.signal }));
    // Cancelled while the tool runs.
    await running;
    stop.abort();
    const o = await run;
    expect(o).toMatchObject({ ok: false, errorKind: 'failed' });
    expect(o.content).toContain('cancelled while running');
    const again = await executor.runPrepared(prep('slow'), makeToolContext({ signal: stop.signal }));
    expect(again).toMatchObject({ errorKind: 'not_run', durationMs: 0 });
  });

  it('caps the text the model sees with a truncation marker, per tool configurable', async () => {
    const big = tool('big', async () => 'x'.repeat(5000));
    const { executor, prep } = setup([big, tool('big2', async () => 'y'.repeat(300))], { big2: { maxResultChars: 100 } });
    const o = await executor.runPrepared(prep('big'), makeToolContext());
    expect(o.content).toBe(`${'x'.repeat(2000)}\n[truncated 3000 chars]`);
    const p = await executor.runPrepared(prep('big2'), makeToolContext());
    expect(p.content).toBe(`${'y'.repeat(100)}\n[truncated 200 chars]`);
  });

  it('shows the model the summary and keeps raw for traces', async () => {
    const { executor, prep } = setup([tool('rich', async () => ({ summary: 'three results', raw: { items: [1, 2, 3] } }))]);
    const o = await executor.runPrepared(prep('rich'), makeToolContext());
    expect(o.content).toBe('three results');
    expect(o.raw).toEqual({ items: [1, 2, 3] });
  });

  it('passes the tool its configured settings', async () => {
    const { executor, prep } = setup([tool('conf', async (_a, ctx) => JSON.stringify(ctx.settings))], { conf: { settings: { region: 'eu' } } });
    expect((await executor.runPrepared(prep('conf'), makeToolContext())).content).toBe('{"region":"eu"}');
  });
});

describe('ToolExecutor.runMany', () => {
  it('runs side-effect-free calls concurrently and returns outcomes in call order', async () => {
    const log: string[] = [];
    const wait = tool('wait', async (a) => {
      log.push(`start ${a.text}`);
      await sleep(a.ms ?? 0);
      log.push(`end ${a.text}`);
      return `done ${a.text}`;
    });
    const { executor, prep } = setup([wait]);
    const outcomes = await executor.runMany(
      [prep('wait', { ms: 150, text: 'A' }, 'c1'), prep('wait', { ms: 10, text: 'B' }, 'c2'), prep('wait', { ms: 80, text: 'C' }, 'c3')],
      () => makeToolContext(),
    );
    expect(outcomes.map((o) => [o.callId, o.content])).toEqual([['c1', 'done A'], ['c2', 'done B'], ['c3', 'done C']]);
    expect(log.slice(0, 3)).toEqual(['start A', 'start B', 'start C']);
    expect(log.indexOf('end B')).toBeLessThan(log.indexOf('end A'));
  });

  it('runs side-effect calls one at a time in order', async () => {
    const log: string[] = [];
    const send = tool('send', async (a) => {
      log.push(`start ${a.text}`);
      await sleep(a.ms ?? 0);
      log.push(`end ${a.text}`);
      return `sent ${a.text}`;
    }, { sideEffects: true });
    const { executor, prep } = setup([send]);
    const outcomes = await executor.runMany(
      [prep('send', { ms: 60, text: '1' }, 'c1'), prep('send', { ms: 5, text: '2' }, 'c2'), prep('send', { ms: 20, text: '3' }, 'c3')],
      () => makeToolContext(),
    );
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
    expect(outcomes.map((o) => o.content)).toEqual(['sent 1', 'sent 2', 'sent 3']);
  });

  it('passes rejected calls through in place and survives a context factory that throws', async () => {
    const { executor, prep } = setup([tool('ok', async () => 'fine'), tool('other', async () => 'other')]);
    const rejected = executor.prepareCall({ id: 'bad', name: 'nope', arguments: '{}' }, { isAdmin: false });
    const outcomes = await executor.runMany([prep('ok', {}, 'c1'), rejected, prep('other', {}, 'c3')], (p) => {
      if (p.tool.name === 'other') throw new Error('no context');
      return makeToolContext();
    });
    expect(outcomes.map((o) => [o.callId, o.ok, o.errorKind])).toEqual([['c1', true, undefined], ['bad', false, 'unknown_tool'], ['c3', false, 'not_run']]);
  });
});
