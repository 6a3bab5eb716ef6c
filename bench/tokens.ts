import pino from 'pino';
import { z } from 'zod';
import { createCore } from '../src/app/app.js';
import { createTokenCounter, type TokenCounter } from '../src/runtime/context/token-counter.js';
import { createSessionStore } from '../src/state/sessions/session-store.js';
import { systemClock } from '../src/basics/clock.js';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';
import type { ToolSpec } from '../src/runtime/provider/provider.js';
import type { ChatMessage, Conversation } from '../src/basics/types.js';
import { startFakeOpenAI, type ChatCompletionRequestBody } from '../test/fakes/openai/fake-openai.js';
import { benchConfig } from './hermes-runners.js';
import { conversationStep, fetchPage, FACT, isSummaryRequest, RECALLED, requestPosition, searchResults, userText } from './conversation-script.js';
import type { PeerModule, PeerTool } from './peers/peer-api.js';
import { median, round, withDeadline } from './stats.js';
import { waitingPort } from './waiting-port.js';
import { rm } from 'node:fs/promises';

/**
 * Section 3: prompt tokens of a long tool-heavy conversation. hermes-agent runs all turns through
 * the gateway with HERMES_CONTEXT_TOKENS; "full history" is what an agent that resends everything
 * would send at each of the same requests (computed from hermes's own stored history); each peer
 * keeps the conversation its documented default way for a shorter run, and what it actually sent
 * to the fake is counted. Every count uses the same tokenizer (o200k, hermes's counter).
 */
export interface TokenSizes { turns: number; peerTurns: number; contextTokens: number }

export interface TokenRow {
  name: string;
  turns: number;
  requests: number;
  p50: number;
  max: number;
  /** Prompt tokens of the last turn's first request. */
  atLastTurn: number;
  /** For peers: tokens sent ÷ full-history tokens at the same requests (last turn measured). */
  ratioToFullHistory?: number;
  /** For peers: atLastTurn scaled to the long run's length through ratioToFullHistory. */
  extrapolatedAtLongRun?: number;
  note: string;
}

export interface TokenResult {
  sizes: TokenSizes;
  rows: TokenRow[];
  summaryCalls: number;
  summaryPromptTokens: number;
  totalPromptTokens: { hermes: number; fullHistory: number };
  factRecalled: boolean;
  factInLastPrompt: boolean;
  factWhere: 'summary' | 'raw history' | 'facts' | 'missing';
  reductionAtLastTurn: number;
  errors: string[];
}

const INSTRUCTIONS = 'You are a helpful assistant in a team chat. Use the tools to look things up.';
const SECTION_DEADLINE_MS = 4 * 60_000;

const tools: PeerTool[] = [
  { name: 'web_search', description: 'Searches the web; returns titles, links and snippets.', argName: 'query', run: searchResults },
  { name: 'fetch_url', description: 'Fetches a web page and returns its readable text.', argName: 'url', run: fetchPage },
];

/** The same two tools for hermes, with result caps above the pages' size so nothing is cut. */
const hermesTools = tools.map((t) =>
  defineTool({ name: t.name, description: t.description, input: z.object({ [t.argName]: z.string() }), maxResultChars: 10_000, run: async (a: Record<string, string>) => t.run(a[t.argName] ?? '') }),
);

/** Wire (Chat Completions) request → hermes's message shapes, so one counter measures everyone. */
export function countRequest(counter: TokenCounter, req: ChatCompletionRequestBody): number {
  const text = (c: unknown): string => (typeof c === 'string' ? c : c == null ? '' : JSON.stringify(c));
  const messages: ChatMessage[] = req.messages.map((m): ChatMessage => {
    switch (m.role) {
      case 'tool':
        return { role: 'tool', toolCallId: m.tool_call_id, name: '', content: text(m.content) };
      case 'assistant':
        return {
          role: 'assistant',
          content: text(m.content),
          toolCalls: (m.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [])),
        };
      case 'system':
      case 'developer':
        return { role: 'system', content: text(m.content) };
      default:
        return { role: 'user', content: text(m.content) };
    }
  });
  const specs: ToolSpec[] = (req.tools ?? []).flatMap((t) =>
    t.type === 'function' ? [{ name: t.function.name, description: t.function.description ?? '', parameters: (t.function.parameters ?? {}) as Record<string, unknown> }] : [],
  );
  return counter.countMessages(messages) + (specs.length ? counter.countTools(specs) : 0);
}

export async function runTokens(sizes: TokenSizes, peers: PeerModule[], log: (line: string) => void): Promise<TokenResult> {
  const counter = createTokenCounter('gpt-4o-mini');
  const errors: string[] = [];
  const fake = await startFakeOpenAI({ handler: (req) => conversationStep(req, sizes.turns) });
  // One person asks 200 questions as fast as answers come, which HERMES_USER_RATE would rightly refuse.
  const { config, dataDir } = await benchConfig(fake.url, { HERMES_CONTEXT_TOKENS: String(sizes.contextTokens), HERMES_USER_RATE: '0' });
  const core = await createCore({ config, log: pino({ level: 'silent' }), tools: hermesTools, reminders: false });
  const { port, wait } = waitingPort();
  core.gateway.registerPort(port);
  await core.start();
  const conversation: Conversation = { platform: 'slack', workspaceId: 'TBENCH', channelId: 'DTOKENS', isDm: true };
  const speaker = { platform: 'slack' as const, workspaceId: 'TBENCH', userId: 'UTOKENS', displayName: 'ana' };
  let lastAnswer = '';
  try {
    await withDeadline('token bench (hermes)', SECTION_DEADLINE_MS, async () => {
      for (let t = 1; t <= sizes.turns; t++) {
        const answer = wait(conversation.channelId);
        await core.gateway.handleMessage({ id: `tok${t}`, conversation, speaker, text: userText(t, sizes.turns), mentioned: true });
        lastAnswer = await answer;
        if (t % 50 === 0) log(`tokens: hermes turn ${t}/${sizes.turns}`);
      }
    });
    const turnRequests = fake.requests.filter((r) => !isSummaryRequest(r));
    const summaryRequests = fake.requests.filter(isSummaryRequest);
    const hermesCounts = turnRequests.map((r) => countRequest(counter, r));
    const lastTurnFirst = turnRequests.findIndex((r) => requestPosition(r).turn === sizes.turns);
    const lastPrompt = JSON.stringify(turnRequests[lastTurnFirst]?.messages ?? []);
    const system = lastPrompt.includes(FACT) ? String((turnRequests[lastTurnFirst]!.messages[0] as { content?: unknown }).content ?? '') : '';

    // Full history: at every model call the agent would send the system prompt, every stored
    // message so far and the tool specs. The stored history holds every message hermes kept.
    const sessions = createSessionStore(core.database, systemClock);
    const session = await sessions.current(conversation);
    const history = await sessions.history(session.id);
    const firstSystem = turnRequests[0]!.messages[0] as { content?: unknown };
    const baseTokens = counter.countMessages([{ role: 'system', content: String(firstSystem.content ?? '') }]) + counter.countTools(hermesTools.map((t) => ({ name: t.name, description: t.description, parameters: z.toJSONSchema(t.input) as Record<string, unknown> })));
    const fullCounts: number[] = [];
    let running = 0;
    history.forEach((m) => {
      if (m.role === 'assistant') fullCounts.push(baseTokens + running);
      running += counter.countMessage(m);
    });
    const fullLastTurn = fullCounts[lastTurnFirst] ?? NaN;
    const rows: TokenRow[] = [
      row(`hermes-agent (HERMES_CONTEXT_TOKENS=${sizes.contextTokens})`, sizes.turns, hermesCounts, hermesCounts[lastTurnFirst] ?? NaN, 'running summary + recent turns, measured'),
      row('full history (resend everything)', sizes.turns, fullCounts, fullLastTurn, 'computed from the same stored history'),
    ];

    for (const peer of peers) {
      try {
        rows.push(await peerRow(peer, sizes, fullCounts, fullLastTurn, counter));
        log(`tokens: ${peer.name} done`);
      } catch (err) {
        errors.push(`${peer.name}: ${(err as Error).message}`);
      }
    }
    const hermesLast = hermesCounts[lastTurnFirst] ?? NaN;
    return {
      sizes,
      rows,
      summaryCalls: summaryRequests.length,
      summaryPromptTokens: summaryRequests.reduce((n, r) => n + countRequest(counter, r), 0),
      totalPromptTokens: { hermes: hermesCounts.reduce((a, b) => a + b, 0), fullHistory: fullCounts.reduce((a, b) => a + b, 0) },
      factRecalled: lastAnswer.includes(RECALLED),
      factInLastPrompt: lastPrompt.includes(FACT),
      factWhere: !lastPrompt.includes(FACT) ? 'missing' : system.includes('Summary') && system.includes(FACT) ? 'summary' : system.includes(FACT) ? 'facts' : 'raw history',
      reductionAtLastTurn: round(fullLastTurn / hermesLast, 2),
      errors,
    };
  } finally {
    await core.close();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function row(name: string, turns: number, counts: number[], atLastTurn: number, note: string): TokenRow {
  return { name, turns, requests: counts.length, p50: median(counts), max: Math.max(...counts), atLastTurn, note };
}

/** A peer keeps the conversation its default way for peerTurns turns; its real requests are counted. */
async function peerRow(peer: PeerModule, sizes: TokenSizes, fullCounts: number[], fullLastTurn: number, counter: TokenCounter): Promise<TokenRow> {
  const fake = await startFakeOpenAI({ handler: (req) => conversationStep(req, sizes.turns) });
  try {
    const agent = await peer.create(fake.url, tools, INSTRUCTIONS);
    await withDeadline(`token bench (${peer.name})`, SECTION_DEADLINE_MS / 2, async () => {
      for (let t = 1; t <= sizes.peerTurns; t++) await agent.ask(userText(t, sizes.turns));
    });
    const counts = fake.requests.map((r) => countRequest(counter, r));
    const lastFirst = fake.requests.findIndex((r) => requestPosition(r).turn === sizes.peerTurns);
    const ratio = counts[lastFirst]! / fullCounts[lastFirst]!;
    return {
      ...row(peer.name, sizes.peerTurns, counts, counts[lastFirst] ?? NaN, `${peer.sessionNote}; measured ${sizes.peerTurns} turns, turn ${sizes.turns} extrapolated`),
      ratioToFullHistory: round(ratio, 3),
      extrapolatedAtLongRun: Math.round(ratio * fullLastTurn),
    };
  } finally {
    await fake.close();
  }
}
