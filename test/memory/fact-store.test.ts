import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFactStore, factPromptLine, FACT_ERRORS, type FactStore } from '../../src/state/memory/fact-store.js';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import type { Store } from '../../src/state/store/store.js';
import type { Clock } from '../../src/basics/clock.js';
import { createTokenCounter } from '../../src/runtime/context/token-counter.js';
import type { Speaker } from '../../src/basics/types.js';
import { FAKE_GITHUB_TOKEN, FAKE_OPENAI_KEY, FAKE_SLACK_BOT_TOKEN } from '../helpers/fake-secrets.js';

const DAY = 24 * 3600 * 1000;

function manualClock(start = Date.UTC(2026, 0, 1)): Clock & { advance(ms: number): void } {
  let now = start;
  return { now: () => now, setTimer: () => () => {}, advance: (ms) => void (now += ms) };
}

// Ids chosen to break naive key building: LIKE wildcards, the key separator, quotes.
const alice: Speaker = { platform: 'slack', workspaceId: 'T_1%', userId: "U_a'li:ce\"", displayName: 'Alice' };
const alike: Speaker = { platform: 'slack', workspaceId: 'T_1%', userId: 'U%a_li:ce', displayName: 'Not Alice' };
const bob: Speaker = { platform: 'slack', workspaceId: 'T_1%', userId: 'U_', displayName: 'Bob' };
const aliceOnDiscord: Speaker = { platform: 'discord', workspaceId: 'T_1%', userId: "U_a'li:ce\"" };
const counter = createTokenCounter('gpt-4o');

describe('fact store on SQLite', () => {
  let dir: string;
  let file: string;
  let store: Store;
  let clock: ReturnType<typeof manualClock>;
  let facts: FactStore;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-facts-'));
    file = path.join(dir, 'hermes.sqlite');
    store = await createSqliteStore({ file });
    clock = manualClock();
    facts = createFactStore(store, clock);
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps each user to their own facts, whatever characters the ids contain', async () => {
    const a = await facts.forUser(alice).remember('Prefers answers in German.');
    await facts.forUser(alike).remember('Works on the billing service.');
    await facts.forUser(bob).remember('Is allergic to peanuts.');
    await facts.forUser(aliceOnDiscord).remember('Likes dark mode.');

    expect(a.merged).toBe(false);
    expect(a.fact.id).toMatch(/^f[0-9a-f]{5}$/);
    expect((await facts.list(alice)).map((f) => f.text)).toEqual(['Prefers answers in German.']);
    expect((await facts.list(alike)).map((f) => f.text)).toEqual(['Works on the billing service.']);
    expect((await facts.list(bob)).map((f) => f.text)).toEqual(['Is allergic to peanuts.']);
    expect((await facts.list(aliceOnDiscord)).map((f) => f.text)).toEqual(['Likes dark mode.']);
    expect(await facts.forUser(bob).recall('German')).toEqual([]);
    expect(await facts.promptFacts(bob, 'german answers billing dark', 1000, counter)).toEqual([
      expect.objectContaining({ text: 'Is allergic to peanuts.' }),
    ]);
    // Someone else's id does nothing to Alice's fact.
    expect(await facts.forget(bob, a.fact.id)).toBe(0);
    expect(await facts.forUser(alike).forget(a.fact.id)).toBe(0);
    expect(await facts.list(alice)).toHaveLength(1);
  });

  it('forget all for one user leaves every other user intact', async () => {
    await facts.forUser(alice).remember('Prefers answers in German.');
    await facts.forUser(alice).remember('Is on the payments team.');
    await facts.forUser(alike).remember('Works on the billing service.');
    await facts.forUser(bob).remember('Is allergic to peanuts.');
    expect(await facts.forget(alice, 'ALL')).toBe(2);
    expect(await facts.list(alice)).toEqual([]);
    expect(await facts.list(alike)).toHaveLength(1);
    expect(await facts.list(bob)).toHaveLength(1);
    expect(await facts.forUser(alice).forget('all')).toBe(0);
  });

  it('forgets one fact by id, case-insensitively', async () => {
    const u = facts.forUser(alice);
    const one = await u.remember('Prefers answers in German.');
    await u.remember('Is on the payments team.');
    expect(await u.forget(` ${one.fact.id.toUpperCase()} `)).toBe(1);
    expect((await u.recall()).map((f) => f.text)).toEqual(['Is on the payments team.']);
    expect(await u.forget('fzzzzz')).toBe(0);
    expect(await u.forget('')).toBe(0);
  });

  it('merges near-duplicates instead of piling them up', async () => {
    const u = facts.forUser(alice);
    const first = await u.remember('Prefers metric units.');
    clock.advance(DAY);
    const wider = await u.remember('prefers metric units for cooking and travel');
    expect(wider.merged).toBe(true);
    expect(wider.fact.id).toBe(first.fact.id);
    expect(wider.fact.text).toBe('prefers metric units for cooking and travel');
    expect(wider.fact.updatedAt).toBe(first.fact.createdAt + DAY);
    expect(wider.fact.createdAt).toBe(first.fact.createdAt);
    // A shorter restatement does not throw the detail away.
    const shorter = await u.remember('Prefers metric units');
    expect(shorter.merged).toBe(true);
    expect(shorter.fact.text).toBe('prefers metric units for cooking and travel');
    // Same words, different order and punctuation: Jaccard 1.
    const reordered = await u.remember('For cooking and travel, prefers metric units!');
    expect(reordered.merged).toBe(true);
    expect(await u.recall()).toHaveLength(1);
    // A different fact is not merged.
    expect((await u.remember('Prefers imperial units for woodworking.')).merged).toBe(false);
    expect(await u.recall()).toHaveLength(2);
  });

  it('rejects secrets, empty and overlong facts with text the model can act on', async () => {
    const u = facts.forUser(alice);
    for (const secret of [
      `My OpenAI key is ${FAKE_OPENAI_KEY}`,
      `slack token ${FAKE_SLACK_BOT_TOKEN}`,
      'password: hunter2',
      `My GitHub token ${FAKE_GITHUB_TOKEN}`,
      'AWS AKIAIOSFODNN7EXAMPLE',
      'db at postgres://admin:s3cret@db.internal:5432/app',
      'random key Zk8f2LmQ9xR4tY7wP3vN6bJ1hC5dG0sA',
    ]) {
      await expect(u.remember(secret), secret).rejects.toThrow(FACT_ERRORS.secret);
    }
    await expect(u.remember('   ')).rejects.toThrow(FACT_ERRORS.empty);
    await expect(u.remember('x'.repeat(501))).rejects.toThrow(/limit is 500/);
    expect(await u.recall()).toEqual([]);
    // Talking about passwords is fine; only a value is refused.
    expect((await u.remember('Wants a reminder to rotate passwords every month.')).merged).toBe(false);
    expect((await u.remember('Their ticket id is 123e4567-e89b-12d3-a456-426614174000.')).merged).toBe(false);
  });

  it('refuses new facts past the per-user limit, but still merges duplicates', async () => {
    const small = createFactStore(store, clock, { maxFactsPerUser: 2 });
    const u = small.forUser(bob);
    await u.remember('Likes tea.');
    await u.remember('Works from Lisbon.');
    await expect(u.remember('Has a cat named Miso.')).rejects.toThrow(FACT_ERRORS.full(2));
    expect((await u.remember('works from lisbon')).merged).toBe(true);
  });

  it('puts the most relevant facts first in the prompt, within the token budget', async () => {
    const u = facts.forUser(alice);
    await u.remember('Is on the payments team.');
    clock.advance(DAY);
    await u.remember('Deploys go through the staging cluster first.');
    clock.advance(DAY);
    await u.remember('Prefers answers in German.');
    clock.advance(DAY);
    await u.remember('Has a dog called Pixel.');

    const ranked = await facts.promptFacts(alice, 'How do I deploy to staging?', 1000, counter);
    expect(ranked.map((f) => f.text)).toEqual([
      'Deploys go through the staging cluster first.', // matches both words
      'Has a dog called Pixel.', // then by recency
      'Prefers answers in German.',
      'Is on the payments team.',
    ]);
    // Budget for two lines: the two most relevant that fit.
    const all = await facts.list(alice);
    const line = (t: string) => counter.count(factPromptLine(all.find((f) => f.text === t)!)) + 1;
    const budget = line('Deploys go through the staging cluster first.') + line('Has a dog called Pixel.');
    const within = await facts.promptFacts(alice, 'How do I deploy to staging?', budget, counter);
    expect(within.map((f) => f.text)).toEqual(['Deploys go through the staging cluster first.', 'Has a dog called Pixel.']);
    const used = within.reduce((n, f) => n + counter.count(factPromptLine(f)) + 1, 0);
    expect(used).toBeLessThanOrEqual(budget);
    expect(await facts.promptFacts(alice, 'anything', 0, counter)).toEqual([]);

    // recall with a query returns only matches, best first; without one, newest first.
    expect((await u.recall('payments')).map((f) => f.text)).toEqual(['Is on the payments team.']);
    expect((await u.recall('cluster deployment')).map((f) => f.text)).toEqual(['Deploys go through the staging cluster first.']);
    expect((await u.recall(undefined, 2)).map((f) => f.text)).toEqual(['Has a dog called Pixel.', 'Prefers answers in German.']);
  });

  it('survives closing and reopening the SQLite file', async () => {
    const saved = await facts.forUser(alice).remember('Prefers answers in German.');
    await facts.forUser(bob).remember('Is allergic to peanuts.');
    await store.close();
    store = await createSqliteStore({ file });
    const reopened = createFactStore(store, clock);
    expect(await reopened.list(alice)).toEqual([saved.fact]);
    expect((await reopened.list(bob)).map((f) => f.text)).toEqual(['Is allergic to peanuts.']);
    expect(await reopened.forget(alice, saved.fact.id)).toBe(1);
  });

  it('serialises concurrent remembers for one user without losing any', async () => {
    const u = facts.forUser(alice);
    const texts = Array.from({ length: 20 }, (_, i) => `Project ${i} codename is ${['red', 'blue', 'green', 'amber'][i % 4]} falcon number ${i * 7919}.`);
    await Promise.all(texts.map((t) => u.remember(t)));
    const listed = await facts.list(alice);
    expect(new Set(listed.map((f) => f.id)).size).toBe(listed.length);
    expect(listed.length).toBe(20);
  });
});
