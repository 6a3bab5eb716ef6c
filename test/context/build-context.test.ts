import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildContext } from '../../src/runtime/context/build-context.js';
import { createTokenCounter } from '../../src/runtime/context/token-counter.js';
import { createLogger } from '../../src/basics/log.js';
import type { ToolSpec } from '../../src/runtime/provider/provider.js';
import type { ChatMessage } from '../../src/basics/types.js';
import { expectValidRequest, rng, summaryOf, words } from './history-fixtures.js';

const counter = createTokenCounter('gpt-4o');
const SYSTEM = 'You are hermes, a helpful agent in a shared Slack channel.';
const TOOLS: ToolSpec[] = [
  { name: 'fetch_url', description: 'Fetch a web page as text.', parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] } },
  { name: 'calculator', description: 'Evaluate arithmetic.', parameters: { type: 'object', properties: { expression: { type: 'string' } } } },
];
const toolsTokens = counter.countTools(TOOLS);

function captureLog() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('info', sink), lines };
}

/**
 * A stand-in for the model summariser that really works from what it is given: it keeps every line
 * that states a fact ("remember: …") from the previous summary and the new messages, plus who asked
 * for the most recent requests, so a fact only survives if the messages carrying it reached it.
 */
function fakeSummarizer() {
  const calls: { prev: string | undefined; msgs: ChatMessage[] }[] = [];
  const summarize = async (prev: string | undefined, msgs: ChatMessage[]): Promise<string> => {
    calls.push({ prev, msgs });
    const facts = new Set((prev ?? '').split('\n').filter((l) => l.startsWith('- fact:')));
    const asks: string[] = [];
    for (const m of msgs) {
      if (m.role !== 'user') continue;
      for (const hit of m.content.matchAll(/remember: ([^.]+)\./g)) facts.add(`- fact: ${hit[1]}`);
      asks.push(`- ${m.speaker?.displayName ?? 'someone'} asked: ${m.content.slice(0, 40)}`);
    }
    return [...facts, ...asks.slice(-3)].join('\n');
  };
  return { calls, summarize };
}

describe('buildContext', () => {
  it('keeps a 200-turn conversation with 5-20 KB tool results within budget and valid on every call', async () => {
    const budget = 8_000;
    const rand = rng(2026);
    const history: ChatMessage[] = [];
    const session = { id: 's1', summary: undefined as string | undefined, summarizedUpTo: 0 };
    const saved: number[] = [];
    const { calls, summarize } = fakeSummarizer();
    const { log, lines } = captureLog();
    const people = [
      { platform: 'slack' as const, workspaceId: 'T1', userId: 'U1', displayName: 'Ada' },
      { platform: 'slack' as const, workspaceId: 'T1', userId: 'U2', displayName: 'Grace' },
    ];
    let requests = 0;
    let fullHistoryTokens = 0;
    let sentTokens = 0;

    const call = async (latestUser: string) => {
      const { messages, promptTokens } = await buildContext({
        system: SYSTEM, session: { ...session }, history, budgetTokens: budget, tools: TOOLS, counter, summarize,
        saveSummary: async (summary, upTo) => {
          expect(upTo).toBeGreaterThan(session.summarizedUpTo);
          expect(history[upTo]?.role).toBe('user'); // only whole turns are ever summarised away
          session.summary = summary;
          session.summarizedUpTo = upTo;
          saved.push(upTo);
        },
        log,
      });
      requests++;
      sentTokens += promptTokens;
      fullHistoryTokens += counter.countMessages([{ role: 'system', content: SYSTEM }, ...history]) + toolsTokens;
      expectValidRequest(messages, { system: SYSTEM, budget, tokens: promptTokens, fits: true, counter, toolsTokens, latestUser });
      expect(promptTokens).toBeLessThanOrEqual(budget);
      return messages;
    };

    let last: ChatMessage[] = [];
    for (let t = 1; t <= 200; t++) {
      const text = t === 1
        ? 'Hello! Please remember: the launch code word is AQUAMARINE-7731. Then fetch the status page.'
        : `Request ${t}: fetch page ${t} and tell me what changed. ${words(rand, 40)}`;
      history.push({ role: 'user', content: text, speaker: people[t % 2]! });
      await call(text);
      const id = `call_${t}`;
      history.push({ role: 'assistant', content: null, toolCalls: [{ id, name: 'fetch_url', arguments: JSON.stringify({ url: `https://example.com/${t}` }) }] });
      history.push({ role: 'tool', toolCallId: id, name: 'fetch_url', content: words(rand, 5_000 + Math.floor(rand() * 15_000)) });
      last = await call(text);
      history.push({ role: 'assistant', content: `Page ${t} changed: ${words(rand, 200)}` });
    }

    expect(requests).toBe(400);
    expect(calls.length).toBeGreaterThan(10);
    expect(saved.length).toBe(calls.length); // every successful summary was saved
    // The fact from turn 1 reached the summariser through the messages it was given, and is still
    // in the running summary sent with the very last request.
    expect(calls.some((c) => c.msgs.some((m) => m.role === 'user' && m.content.includes('AQUAMARINE-7731')))).toBe(true);
    expect(session.summary).toContain('AQUAMARINE-7731');
    expect(summaryOf(last)).toContain('launch code word is AQUAMARINE-7731');
    expect(summaryOf(last)).toMatch(/- (Ada|Grace) asked: Request \d+/); // who asked survives too
    // The whole history would have been far larger than what was sent.
    expect(sentTokens).toBeLessThan(fullHistoryTokens / 10);
    expect(lines.filter((l) => l.level === 40 || l.level === 50)).toEqual([]);
  });

  it('never tokenizes a request that fits by bytes', async () => {
    const refuse = () => {
      throw new Error('the tokenizer ran');
    };
    const counter = { ...createTokenCounter('gpt-4o'), count: refuse, countMessage: refuse, countMessages: refuse, countTools: refuse };
    const tools: ToolSpec[] = [{ name: 'lookup', description: 'Looks things up', parameters: { type: 'object', properties: { key: { type: 'string' } } } }];
    const history: ChatMessage[] = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'how are you?' }];
    const noLog = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));
    const r = await buildContext({ system: 'sys', session: { id: 's', summarizedUpTo: 0 }, history, budgetTokens: 4000, tools, counter, summarize: refuse, saveSummary: refuse, log: noLog });
    expect(r.messages).toEqual([{ role: 'system', content: 'sys' }, ...history]);
    expect(r.promptTokens).toBeGreaterThanOrEqual(createTokenCounter('gpt-4o').countMessages(r.messages));
  });

  it('keeps the raw turns and logs when the summary call fails, then retries them', async () => {
    const history: ChatMessage[] = [];
    for (let t = 0; t < 12; t++) {
      history.push({ role: 'user', content: `question ${t}: ${words(rng(t), 400)}` });
      history.push({ role: 'assistant', content: `answer ${t}: ${words(rng(100 + t), 800)}` });
    }
    history.push({ role: 'user', content: 'latest question' });
    const { log, lines } = captureLog();
    let saves = 0;
    const budget = 1_200;
    const failing = await buildContext({
      system: SYSTEM, session: { id: 's2', summary: 'earlier summary', summarizedUpTo: 2 }, history, budgetTokens: budget, tools: TOOLS, counter,
      summarize: async () => { throw new Error('model timed out'); },
      saveSummary: async () => { saves++; },
      log,
    });
    expect(saves).toBe(0);
    expectValidRequest(failing.messages, { system: SYSTEM, budget, tokens: failing.promptTokens, fits: true, counter, toolsTokens, latestUser: 'latest question' });
    expect(summaryOf(failing.messages)).toBe('earlier summary');
    const warn = lines.find((l) => l.level === 40);
    expect(warn?.msg).toMatch(/running summary failed/);
    expect(warn?.err).toBe('model timed out');
    expect(warn?.sessionId).toBe('s2');

    // Next call: the same turns (starting right after the old summarizedUpTo) go to the summariser.
    const { calls, summarize } = fakeSummarizer();
    let savedUpTo = -1;
    await buildContext({
      system: SYSTEM, session: { id: 's2', summary: 'earlier summary', summarizedUpTo: 2 }, history, budgetTokens: budget, tools: TOOLS, counter, summarize,
      saveSummary: async (_s, upTo) => { savedUpTo = upTo; },
      log,
    });
    expect(calls[0]?.prev).toBe('earlier summary');
    expect(calls[0]?.msgs[0]).toEqual(history[2]);
    expect(savedUpTo).toBeGreaterThan(2);
  });

  it('still answers when saving the summary fails, using the new summary for this request', async () => {
    const history: ChatMessage[] = [];
    for (let t = 0; t < 10; t++) history.push({ role: 'user', content: `q${t} ${words(rng(t), 1500)}` }, { role: 'assistant', content: `a${t}` });
    history.push({ role: 'user', content: 'now' });
    const { log, lines } = captureLog();
    const r = await buildContext({
      system: SYSTEM, session: { id: 's3', summarizedUpTo: 0 }, history, budgetTokens: 1_000, tools: [], counter,
      summarize: async (_p, msgs) => `summary of ${msgs.length} messages`,
      saveSummary: async () => { throw new Error('disk full'); },
      log,
    });
    expect(summaryOf(r.messages)).toMatch(/^summary of \d+ messages$/);
    expect(r.promptTokens).toBeLessThanOrEqual(1_000);
    expect(lines.some((l) => l.level === 50 && l.msg === 'saving the running summary failed' && l.err === 'disk full')).toBe(true);
  });

  it('clamps a summarizedUpTo beyond the history instead of failing', async () => {
    const { log } = captureLog();
    const history: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    const r = await buildContext({
      system: SYSTEM, session: { id: 's4', summarizedUpTo: 99 }, history, budgetTokens: 1_000, tools: [], counter,
      summarize: async () => 'never', saveSummary: async () => {}, log,
    });
    expect(r.messages).toEqual([{ role: 'system', content: SYSTEM }]);
  });
});
