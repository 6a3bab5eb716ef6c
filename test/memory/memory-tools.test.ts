import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { forgetFactTool, memoryTools, recallFactsTool, rememberFactTool } from '../../tools/memory.js';
import { createFactStore, FACT_ERRORS, type FactStore } from '../../src/state/memory/fact-store.js';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import type { Store } from '../../src/state/store/store.js';
import type { ToolContext, ToolResult } from '../../src/capabilities/toolkit/tool-api.js';
import type { Speaker } from '../../src/basics/types.js';
import { makeToolContext } from '../tools/context-helper.js';
import { ToolExecutor } from '../../src/capabilities/toolkit/executor.js';
import { ToolRegistry } from '../../src/capabilities/toolkit/registry.js';
import { FAKE_OPENAI_KEY_SHORT } from '../helpers/fake-secrets.js';

const ada: Speaker = { platform: 'discord', workspaceId: 'G1', userId: '111', displayName: 'Ada' };
const bo: Speaker = { platform: 'discord', workspaceId: 'G1', userId: '222', displayName: 'Bo' };
const text = (r: ToolResult) => (typeof r === 'string' ? r : r.summary);

describe('memory tools', () => {
  let dir: string;
  let store: Store;
  let facts: FactStore;
  const ctxFor = (s: Speaker): ToolContext => makeToolContext({ speaker: s, facts: facts.forUser(s) });

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-memtools-'));
    store = await createSqliteStore({ file: path.join(dir, 'hermes.sqlite') });
    facts = createFactStore(store, { now: () => Date.UTC(2026, 2, 14), setTimer: () => () => {} });
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('declares the stable names, the memory category and no approval', () => {
    expect(memoryTools.map((t) => t.name)).toEqual(['remember_fact', 'recall_facts', 'forget_fact']);
    for (const t of memoryTools) {
      expect(t.category).toBe('memory');
      expect(t.needsApproval).toBeFalsy();
    }
    expect(rememberFactTool.input.safeParse({ fact: 'x' }).success).toBe(true);
    expect(rememberFactTool.input.safeParse({}).success).toBe(false);
    expect(recallFactsTool.input.safeParse({}).success).toBe(true);
    expect(forgetFactTool.input.safeParse({ id: 'all' }).success).toBe(true);
  });

  it('remembers, recalls and forgets for the speaking user only', async () => {
    const saved = text(await rememberFactTool.run({ fact: 'Prefers answers in German.' }, ctxFor(ada)));
    const id = /Saved fact (f[0-9a-f]{5}): Prefers answers in German\./.exec(saved)?.[1];
    expect(id).toBeDefined();
    expect(text(await rememberFactTool.run({ fact: 'prefers answers in german' }, ctxFor(ada)))).toBe(
      `Updated existing fact ${id} (it said nearly the same), now: prefers answers in german`,
    );

    const listed = text(await recallFactsTool.run({}, ctxFor(ada)));
    expect(listed).toBe(`Saved facts (1):\n${id}: prefers answers in german (saved 2026-03-14)`);
    expect(text(await recallFactsTool.run({ query: 'German' }, ctxFor(ada)))).toContain(`${id}: prefers answers in german`);
    expect(text(await recallFactsTool.run({ query: 'pizza' }, ctxFor(ada)))).toBe('No saved fact matches "pizza". Call recall_facts without a query to list them all.');

    // Bo sees nothing of Ada's and cannot delete it by id.
    expect(text(await recallFactsTool.run({}, ctxFor(bo)))).toBe('No facts are saved for this user.');
    expect(text(await recallFactsTool.run({ query: 'German' }, ctxFor(bo)))).toBe('No facts are saved for this user.');
    expect(text(await forgetFactTool.run({ id: id! }, ctxFor(bo)))).toBe(`No fact with id "${id}" exists for this user; call recall_facts to see the ids.`);
    expect(text(await forgetFactTool.run({ id: 'all' }, ctxFor(bo)))).toBe('There were no facts to forget.');

    expect(text(await forgetFactTool.run({ id: id! }, ctxFor(ada)))).toBe(`Forgot fact ${id}.`);
    await rememberFactTool.run({ fact: 'Likes tea.' }, ctxFor(ada));
    await rememberFactTool.run({ fact: 'Works from Lisbon.' }, ctxFor(ada));
    expect(text(await forgetFactTool.run({ id: 'all' }, ctxFor(ada)))).toBe('Forgot all 2 facts about this user.');
    expect(await facts.list(ada)).toEqual([]);
  });

  it('lets the store refusal reach the model as the error text', async () => {
    await expect(rememberFactTool.run({ fact: 'my password is hunter2' }, ctxFor(ada))).rejects.toThrow(FACT_ERRORS.secret);
    expect(await facts.list(ada)).toEqual([]);
  });

  it('runs through the real executor without approval, the refusal reading as a failure', async () => {
    const registry = new ToolRegistry({});
    for (const t of memoryTools) registry.register(t);
    const executor = new ToolExecutor({ registry, defaultTimeoutMs: 2000 });
    const call = (name: string, args: object) => {
      const p = executor.prepareCall({ id: `call_${name}`, name, arguments: JSON.stringify(args) }, { isAdmin: false });
      if (p.kind !== 'ready') throw new Error(`expected ${name} to run without approval, got ${p.kind}`);
      return executor.runPrepared(p, ctxFor(ada));
    };
    expect(await call('remember_fact', { fact: 'Likes tea.' })).toMatchObject({ ok: true, content: expect.stringMatching(/^Saved fact f[0-9a-f]{5}: Likes tea\.$/) });
    expect(await call('remember_fact', { fact: `api key: ${FAKE_OPENAI_KEY_SHORT}` })).toMatchObject({
      ok: false,
      errorKind: 'failed',
      content: `remember_fact failed: ${FACT_ERRORS.secret}`,
    });
  });
});
