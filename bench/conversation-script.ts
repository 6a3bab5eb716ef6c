import type { ChatCompletionRequestBody, FakeReply } from '../test/fakes/openai/fake-openai.js';

/**
 * The long conversation of the token bench: the fact is given in turn 1, the question about it is
 * the last turn, and in between every turn looks like real agent work — web searches (~1.5 KB of
 * results) and fetched pages (3–8 KB of text) followed by a few sentences of answer. Everything is
 * derived from the turn number, so every agent receives the same conversation; the fake decides
 * from the request alone.
 */
export const FACT = 'BLUE-HERON-42';
export const RECALLED = `Your project code name is ${FACT}.`;
export const NOT_RECALLED = 'I do not know your project code name.';
const SUMMARY_MARKER = 'You maintain the running summary';

export function userText(turn: number, lastTurn: number): string {
  if (turn === 1) return `[turn 1] Please remember this for later: my project code name is ${FACT}. Then look up what a heron eats.`;
  if (turn === lastTurn) return `[turn ${turn}] What is my project code name?`;
  return `[turn ${turn}] Find out what is new about topic ${turn} (${TOPICS[turn % TOPICS.length]}) and give me the key points.`;
}

const TOPICS = ['vector databases', 'Rust async runtimes', 'HTTP/3 adoption', 'SQLite WAL mode', 'Kubernetes autoscaling', 'TLS certificate rotation', 'Postgres logical replication', 'WebAssembly components'];
const WORDS = 'the of and to in is that for it as with was on by be at this from or an are which system data service release version performance users support change update team feature model network memory request server client latency throughput'.split(' ');

/** Deterministic prose of about `chars` characters. */
function prose(seed: number, chars: number): string {
  let x = seed * 2654435761 % 4294967296 || 1;
  const out: string[] = [];
  let len = 0;
  while (len < chars) {
    const sentence: string[] = [];
    const n = 8 + (x % 14);
    for (let i = 0; i < n; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      sentence.push(WORDS[x % WORDS.length]!);
    }
    const s = sentence.join(' ');
    out.push(s.charAt(0).toUpperCase() + s.slice(1) + '.');
    len += s.length + 2;
  }
  return out.join(' ');
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h;
}

/** A fetched page as readable text: 3–8 KB. */
export function fetchPage(url: string): string {
  const h = hash(url);
  const size = 3000 + (h % 5000);
  return `Title: Notes on ${url.split('/').pop()}\nURL: ${url}\n\n${prose(h, size)}`;
}

/** Five search results with titles, links and snippets: about 1.5 KB. */
export function searchResults(query: string): string {
  const h = hash(query);
  return Array.from({ length: 5 }, (_, i) => {
    const slug = `${query.toLowerCase().replace(/[^a-z0-9]+/g, '-').slice(0, 40)}-${i + 1}`;
    return `${i + 1}. ${query} — result ${i + 1}\n   https://example.org/${slug}\n   ${prose(h + i, 220)}`;
  }).join('\n');
}

type WireMessage = { role: string; content?: unknown };
const textOf = (m: WireMessage | undefined): string => (typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? ''));

export function isSummaryRequest(req: ChatCompletionRequestBody): boolean {
  return textOf(req.messages[0] as WireMessage).includes(SUMMARY_MARKER);
}

/** Which turn a request belongs to and how many tool results it already carries. */
export function requestPosition(req: ChatCompletionRequestBody): { turn: number; toolResults: number } {
  const messages = req.messages as WireMessage[];
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  const turn = Number(/\[turn (\d+)\]/.exec(textOf(messages[lastUser]))?.[1] ?? 0);
  return { turn, toolResults: messages.slice(lastUser + 1).filter((m) => m.role === 'tool').length };
}

/** Tool calls per turn: a steady mix of search-then-fetch, fetch only, search only and plain chat. */
function plan(turn: number): Array<{ name: 'web_search' | 'fetch_url'; arguments: Record<string, string> }> {
  const topic = TOPICS[turn % TOPICS.length]!;
  const url = `https://example.org/articles/${topic.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}-${turn}`;
  switch (turn % 4) {
    case 0: return [{ name: 'fetch_url', arguments: { url } }];
    case 1: return [{ name: 'web_search', arguments: { query: topic } }, { name: 'fetch_url', arguments: { url } }];
    case 2: return [];
    default: return [{ name: 'web_search', arguments: { query: `${topic} news` } }];
  }
}

export function conversationStep(req: ChatCompletionRequestBody, lastTurn: number): FakeReply {
  if (isSummaryRequest(req)) return { text: summarise(textOf(req.messages[1] as WireMessage)) };
  const { turn, toolResults } = requestPosition(req);
  if (turn === lastTurn) return { text: JSON.stringify(req.messages).includes(FACT) ? RECALLED : NOT_RECALLED };
  const calls = turn === lastTurn ? [] : plan(turn);
  const next = calls[toolResults];
  if (next) return { toolCalls: [next] };
  return { text: `Here are the key points for turn ${turn}: ${prose(turn * 7, 350)}` };
}

const MAX_BULLETS = 24;

/**
 * The scripted summariser really summarises: it merges the earlier summary's bullets with one
 * bullet per user request in the new transcript, keeps facts the user asked to remember ahead of
 * everything else (as the summary prompt asks), and drops raw tool output and older requests once
 * the summary is full.
 */
export function summarise(request: string): string {
  const [earlierPart = '', transcriptPart = ''] = request.split('\n\nNew transcript:\n');
  const earlier = earlierPart.split('\n').filter((l) => l.startsWith('- '));
  const facts = earlier.filter((l) => l.startsWith('- Fact: '));
  const others = earlier.filter((l) => !l.startsWith('- Fact: '));
  for (const line of transcriptPart.split('\n')) {
    // "User: …" or "User ana (slack:U1): …", as the hermes summariser renders a user message.
    const m = /^User(?: [^\n]*?\))?: (.*)$/.exec(line);
    if (!m) continue;
    const said = m[1]!.replace(/\[turn \d+\]\s*/, '');
    const remember = /remember this for later: ([^.]*\.)/i.exec(said);
    if (remember) facts.push(`- Fact: ${remember[1]}`);
    others.push(`- Asked: ${said.slice(0, 90)}`);
  }
  return [...facts, ...others.slice(-Math.max(0, MAX_BULLETS - facts.length))].join('\n');
}
