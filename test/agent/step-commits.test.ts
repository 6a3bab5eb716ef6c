import { afterEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import Database from 'better-sqlite3';
import { calculator } from '../../tools/calculator.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';

/**
 * A step's writes through the gateway on SQLite: the model call's charge (the daily token count)
 * and the step's messages are written together, in one statement, and are durable — visible to
 * another connection, which sees only committed rows — before the next model call starts.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

interface Seen {
  /** Committed messages of the session when the model was called. */
  roles: string[];
  /** Committed tokens of the speaker today. */
  tokens: number;
}

describe('one commit per step (SQLite)', () => {
  it("commits each step's charge with its messages, before the next model call", async () => {
    h = await startHarness({ tools: [calculator], env: { HERMES_USER_DAILY_TOKENS: '1000000', HERMES_USER_RATE: '0' } });
    const file = path.join(h.dataDir, 'hermes.sqlite');
    const harness = h;
    const seen: Seen[] = [];
    const logged: Array<{ table: string; commits: number }> = [];
    const stats = harness.core.database.stats;
    stats.onQuery = (sql) => {
      const table = /^insert into "hermes_(usage|message|recall_message)"/.exec(sql)?.[1];
      if (table) logged.push({ table, commits: stats.commits ?? 0 });
    };
    harness.fake.setHandler((_req, i) => {
      const peek = new Database(file, { readonly: true });
      try {
        const bodies = peek.prepare("select m.body from hermes_message m join hermes_conversation c on c.current_session = m.session_id where c.key like '%C-steps%' order by m.seq").all() as Array<{ body: string }>;
        const usage = peek.prepare("select coalesce(sum(tokens), 0) as n from hermes_usage where kind = 'person' and subject = 'slack:U1'").get() as { n: number };
        seen.push({ roles: bodies.map((b) => (JSON.parse(b.body) as { role: string }).role), tokens: Number(usage.n) });
      } finally {
        peek.close();
      }
      const usage = { prompt_tokens: 100, completion_tokens: 10 };
      return i < 2 ? { toolCalls: [{ id: `c${i}`, name: 'calculator', arguments: { expression: `${i} + 1` } }], usage } : { text: 'done', usage };
    });
    expect(await h.core.gateway.handleMessage({ id: 'm1', conversation: conv('C-steps'), speaker: user('U1'), text: 'add twice', mentioned: true })).toBe('queued');
    await h.port.waitFor(isText);
    await h.core.gateway.idle();

    if (process.env.STEP_COMMITS_LIST) console.log(JSON.stringify(seen));
    expect(h.port.texts()).toEqual(['done']);
    // The question before the first call; each step's assistant message, its tool result and its
    // tokens before the next one.
    expect(seen.map((s) => s.roles)).toEqual([['user'], ['user', 'assistant', 'tool'], ['user', 'assistant', 'tool', 'assistant', 'tool']]);
    expect(seen.map((s) => s.tokens)).toEqual([0, 110, 220]);
    // Each step's token charge rides on the append of what the model said (schema step 0015), as
    // the answer's search row does (step 0013): neither is a write of its own. So each step's
    // charge commits with its message, and the tool results (written after the tools ran) are a
    // commit of their own.
    expect(logged.filter((w) => w.table !== 'message')).toEqual([]);
    const writes = logged.slice(-5);
    expect(new Set(writes.map((w) => w.commits)).size).toBe(5);
    const peek = new Database(file, { readonly: true });
    try {
      expect((peek.prepare("select tokens from hermes_usage where kind = 'person' and subject = 'slack:U1'").get() as { tokens: number }).tokens).toBe(330);
      expect(peek.prepare("select author, text from hermes_recall_message order by seq").all()).toEqual([{ author: 'slack:T1:U1', text: 'add twice' }, { author: 'bot', text: 'done' }]);
    } finally {
      peek.close();
    }
  });
  it("commits the note on calls it could not read with the step's tool results, before the next model call", async () => {
    h = await startHarness({ tools: [calculator], env: { HERMES_USER_RATE: '0' } });
    const file = path.join(h.dataDir, 'hermes.sqlite');
    const appends: string[] = [];
    h.core.database.stats.onQuery = (sql) => {
      if (sql.startsWith('insert into "hermes_message"')) appends.push(sql);
    };
    const seen: string[][] = [];
    h.fake.setHandler((_req, i) => {
      const peek = new Database(file, { readonly: true });
      try {
        const bodies = peek.prepare("select m.body from hermes_message m join hermes_conversation c on c.current_session = m.session_id where c.key like '%C-notes%' order by m.seq").all() as Array<{ body: string }>;
        seen.push(bodies.map((b) => { const m = JSON.parse(b.body) as { role: string; content: string }; return m.content?.includes?.('could not be understood') ? 'note' : m.role; }));
      } finally {
        peek.close();
      }
      // One call the loop can read and one it cannot, in the text form of tool calls.
      return i === 0 ? { text: '<tool_call>{"name": "calculator", "arguments": {"expression": "1 + 1"}}</tool_call><tool_call>{"name": </tool_call>' } : { text: 'done' };
    });
    expect(await h.core.gateway.handleMessage({ id: 'm1', conversation: conv('C-notes'), speaker: user('U1'), text: 'add', mentioned: true })).toBe('queued');
    await h.port.waitFor(isText);
    await h.core.gateway.idle();

    expect(h.port.texts()).toEqual(['done']);
    // The second call saw the tool's result and the note, both committed.
    expect(seen).toEqual([['user'], ['user', 'assistant', 'tool', 'note']]);
    // Question, the assistant's calls, the result with the note (one statement, so one commit; the
    // note had a statement and a commit of its own after the results), the answer.
    expect(appends).toHaveLength(4);
  });
});
