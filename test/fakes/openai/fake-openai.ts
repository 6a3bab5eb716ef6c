import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import { PROBE_PNG } from '../../../src/runtime/vision/vision-probe.js';

/**
 * A scripted OpenAI-compatible server on 127.0.0.1 for tests and benchmarks. Replies come from a
 * FIFO queue, then from a handler, then default to `{ text: 'ok' }`. The real `openai` SDK talks to
 * it over HTTP, so retries, timeouts and streaming are exercised for real.
 */

export type ChatCompletionRequestBody = ChatCompletionCreateParams;

/**
 * How a reply is streamed when the request asks for `stream: true` (ignored otherwise).
 * Without it, text and each call's arguments come in two halves and usage comes last when asked for.
 */
export interface StreamScript {
  /** The text's deltas exactly as sent; joined they must equal the reply's text. */
  textChunks?: string[];
  /** Wait between chunks, like a model writing. */
  chunkDelayMs?: number;
  /** No usage chunk even when `stream_options.include_usage` asks for one (as some servers do). */
  omitUsage?: boolean;
  /**
   * After `chunks` chunks: `event` sends an error event and ends the stream, `drop` cuts the
   * connection, `hang` sends nothing more (until the client gives up or close()).
   */
  breakAfter?: { chunks: number; how: 'event' | 'drop' | 'hang' };
}

type Usage = { prompt_tokens: number; completion_tokens: number };

export type FakeReply =
  | { text: string; delayMs?: number; usage?: Usage; stream?: StreamScript }
  | { toolCalls: Array<{ name: string; arguments: string | Record<string, unknown>; id?: string }>; text?: string; delayMs?: number; usage?: Usage; stream?: StreamScript }
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { hang: true }
  | { malformedToolCall: true; name?: string };

export type FakeHandler = (req: ChatCompletionRequestBody, callIndex: number) => FakeReply | Promise<FakeReply>;

export interface FakeOpenAI {
  /** Base URL including /v1: pass as OPENAI_BASE_URL / baseURL. */
  url: string;
  /** Every /v1/chat/completions body received, in order. */
  requests: ChatCompletionRequestBody[];
  enqueue(...replies: FakeReply[]): void;
  setHandler(h: FakeHandler): void;
  setLatency(ms: number): void;
  /** Chat requests received and not yet answered (or given up by the client) right now. */
  readonly inFlight: number;
  /**
   * The bot's "does this model take images?" probes (a 1×1 PNG), answered by the fake itself from
   * its vision setting: kept apart from `requests`, never taking a scripted reply.
   */
  visionProbes: ChatCompletionRequestBody[];
  /** Requests with image parts refused with a 400 while vision is off (not in `requests` either). */
  imageRefusals: ChatCompletionRequestBody[];
  /** Whether the model takes images (default true); off, any request with an image part gets a 400 as OpenAI's text models answer. */
  setVision(on: boolean): void;
  /** Every /v1/embeddings request received (model and inputs), in order. */
  embeddingRequests: Array<{ model: string; input: string[] }>;
  /** `ok` (default): deterministic vectors (see fakeEmbedding); `fail`: every /v1/embeddings call gets a 500. */
  setEmbeddings(mode: 'ok' | 'fail'): void;
  /**
   * Holds every /v1/embeddings answer (requests are still recorded as they arrive) until the
   * returned function is called: a slow embedding server, to show nothing else waits on it.
   */
  holdEmbeddings(): () => void;
  /** The most chat requests that were in flight at the same time: proof of overlap that needs no timing. */
  readonly peakInFlight: number;
  /** Chat requests whose client went away before the answer was sent (a cancelled call). */
  readonly abandoned: number;
  /** When (Date.now()) each streamed reply's first visible text was written to the socket, in order. */
  firstTextAt: number[];
  close(): Promise<void>;
}

/** Shape of one answer after the reply script is resolved; shared by JSON and SSE rendering. */
interface Answer {
  text: string | null;
  toolCalls: ChatCompletionMessageFunctionToolCall[];
  usage: CompletionUsage;
}

const MALFORMED_ARGUMENTS = '{"expression": "2 + 2", ';

export interface FakeOpenAIOptions {
  handler?: FakeHandler;
  latencyMs?: number;
  /** Port on 127.0.0.1 (default: any free port). */
  port?: number;
  /** Ids `GET /v1/models` lists (default: fake-model and gpt-4o-mini, the bot's default model). */
  models?: string[];
  /** When set, a request without `Authorization: Bearer <apiKey>` gets 401 like a real server. */
  apiKey?: string;
  /** Also answer `POST|PUT /sink` with 200 (a webhook target for `npm run fake-model`). */
  sink?: boolean;
  /** Whether the model takes images (default true). */
  vision?: boolean;
}

/** What OpenAI answers when a text-only model is sent an image part. */
export const NO_VISION_ERROR = { error: { message: 'Invalid content type. image_url is only supported by certain models.', type: 'invalid_request_error', param: 'messages.[0].content.[1].type', code: null } };

export const FAKE_EMBEDDING_DIMS = 64;

/**
 * Words that mean the same to the fake embedding model: each group shares one dimension, so
 * "automobile" lands next to "car" though no letter matches (what keyword search cannot find).
 */
const SAME_MEANING: readonly string[][] = [
  ['car', 'automobile', 'vehicle', 'sedan'],
  ['money', 'budget', 'funds', 'cash'],
  ['holiday', 'vacation', 'leave'],
];

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** The fake model's vector of a text: a hashed bag of words (word groups above share a slot), deterministic. */
export function fakeEmbedding(text: string): number[] {
  const v = new Array<number>(FAKE_EMBEDDING_DIMS).fill(0);
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const group = SAME_MEANING.findIndex((g) => g.includes(w));
    const key = group >= 0 ? `group:${group}` : w;
    v[fnv1a(key) % FAKE_EMBEDDING_DIMS]! += 1;
  }
  return v;
}

function imageParts(body: ChatCompletionRequestBody): string[] {
  return body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content.flatMap((p) => (p.type === 'image_url' ? [p.image_url.url] : [])) : []));
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const queue: FakeReply[] = [];
  const requests: ChatCompletionRequestBody[] = [];
  const visionProbes: ChatCompletionRequestBody[] = [];
  const imageRefusals: ChatCompletionRequestBody[] = [];
  const embeddingRequests: Array<{ model: string; input: string[] }> = [];
  let embeddingsMode: 'ok' | 'fail' = 'ok';
  let embeddingsGate: Promise<void> | undefined;
  const firstTextAt: number[] = [];
  let vision = opts.vision ?? true;
  let handler = opts.handler;
  let latencyMs = opts.latencyMs ?? 0;
  let callIndex = 0;
  let inFlight = 0;
  let peakInFlight = 0;
  let abandoned = 0;
  const sockets = new Set<Socket>();

  const server = http.createServer((req, res) => {
    void route(req, res).catch((err: unknown) => {
      if (!res.headersSent && !res.destroyed) sendJson(res, 500, { error: { message: `fake server error: ${String(err)}`, type: 'server_error' } });
    });
  });
  // Longer than clients' idle keep-alive, so a reused socket is never closed under a request
  // (that race shows up as random ECONNRESETs in benchmarks). close() destroys idle sockets anyway.
  server.keepAliveTimeout = 65_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (opts.sink && path === '/sink' && (req.method === 'POST' || req.method === 'PUT')) {
      await readBody(req);
      sendJson(res, 200, { ok: true, received: 'the fake model server\'s webhook sink got it' });
      return;
    }
    if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      sendJson(res, 401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } });
      return;
    }
    if (req.method === 'GET' && path === '/v1/models') {
      const ids = opts.models ?? ['fake-model', 'gpt-4o-mini'];
      sendJson(res, 200, { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })) });
      return;
    }
    if (req.method === 'POST' && path === '/v1/embeddings') {
      const body = JSON.parse(await readBody(req)) as { model?: string; input?: string | string[] };
      const input = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? body.input : [];
      embeddingRequests.push({ model: body.model ?? '', input });
      if (embeddingsGate) await embeddingsGate;
      if (embeddingsMode === 'fail') {
        sendJson(res, 500, { error: { message: 'fake embeddings failure', type: 'server_error', code: null } });
        return;
      }
      const data = input.map((t, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(t) }));
      sendJson(res, 200, { object: 'list', model: body.model, data, usage: { prompt_tokens: input.length, total_tokens: input.length } });
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' } });
      return;
    }
    const raw = await readBody(req);
    let body: ChatCompletionRequestBody;
    try {
      body = JSON.parse(raw) as ChatCompletionRequestBody;
    } catch {
      sendJson(res, 400, { error: { message: 'request body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    const images = imageParts(body);
    if (body.messages.length === 1 && images.length === 1 && images[0] === PROBE_PNG) {
      visionProbes.push(body);
      if (vision) sendJson(res, 200, toCompletion(body.model, { text: 'OK', toolCalls: [], usage: { prompt_tokens: 90, completion_tokens: 1, total_tokens: 91 } }, -1));
      else sendJson(res, 400, NO_VISION_ERROR);
      return;
    }
    if (images.length && !vision) {
      imageRefusals.push(body);
      sendJson(res, 400, NO_VISION_ERROR);
      return;
    }
    requests.push(body);
    const index = callIndex++;
    inFlight += 1;
    peakInFlight = Math.max(peakInFlight, inFlight);
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      inFlight -= 1;
      if (!res.writableFinished) abandoned += 1;
    };
    res.on('finish', settle);
    res.on('close', settle);
    const reply = queue.shift() ?? (handler ? await handler(body, index) : { text: 'ok' });

    if ('hang' in reply) return; // never answer; close() destroys the socket
    const delay = latencyMs + ('delayMs' in reply && reply.delayMs ? reply.delayMs : 0);
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    if (res.destroyed) return;

    if ('status' in reply) {
      const payload = reply.body ?? { error: { message: `fake error ${reply.status}`, type: 'server_error', code: null } };
      sendJson(res, reply.status, payload, reply.headers);
      return;
    }
    const answer = toAnswer(reply, raw.length, index);
    if (body.stream) {
      const script = 'stream' in reply ? (reply.stream ?? {}) : {};
      const withUsage = body.stream_options?.include_usage === true && !script.omitUsage;
      await sendStream(res, body.model, answer, index, script, withUsage, (at) => firstTextAt.push(at));
    } else sendJson(res, 200, toCompletion(body.model, answer, index));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    embeddingRequests,
    setEmbeddings(mode) {
      embeddingsMode = mode;
    },
    holdEmbeddings() {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      embeddingsGate = gate;
      return () => {
        if (embeddingsGate === gate) embeddingsGate = undefined;
        release();
      };
    },
    visionProbes,
    imageRefusals,
    setVision: (on) => void (vision = on),
    enqueue: (...replies) => void queue.push(...replies),
    setHandler: (h) => void (handler = h),
    setLatency: (ms) => void (latencyMs = ms),
    get inFlight() {
      return inFlight;
    },
    get peakInFlight() {
      return peakInFlight;
    },
    firstTextAt,
    get abandoned() {
      return abandoned;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

function toAnswer(reply: Exclude<FakeReply, { status: number } | { hang: true }>, rawLength: number, index: number): Answer {
  let text: string | null = null;
  let toolCalls: ChatCompletionMessageFunctionToolCall[] = [];
  if ('malformedToolCall' in reply) {
    toolCalls = [{ id: `call_${index}_0`, type: 'function', function: { name: reply.name ?? 'calculator', arguments: MALFORMED_ARGUMENTS } }];
  } else if ('toolCalls' in reply) {
    text = reply.text ?? null;
    toolCalls = reply.toolCalls.map((c, i) => ({
      id: c.id ?? `call_${index}_${i}`,
      type: 'function',
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
    }));
  } else {
    text = reply.text;
  }
  const given = 'usage' in reply ? reply.usage : undefined;
  // ~4 characters per token is close enough for budgets and benchmarks.
  const promptTokens = given?.prompt_tokens ?? Math.max(1, Math.ceil(rawLength / 4));
  const outChars = (text?.length ?? 0) + toolCalls.reduce((n, c) => n + c.function.name.length + c.function.arguments.length, 0);
  const completionTokens = given?.completion_tokens ?? Math.max(1, Math.ceil(outChars / 4));
  return {
    text,
    toolCalls,
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

function toCompletion(model: string, a: Answer, index: number): ChatCompletion {
  return {
    id: `chatcmpl-fake-${index}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        finish_reason: a.toolCalls.length ? 'tool_calls' : 'stop',
        logprobs: null,
        message: { role: 'assistant', content: a.text, refusal: null, ...(a.toolCalls.length ? { tool_calls: a.toolCalls } : {}) },
      },
    ],
    usage: a.usage,
  };
}

async function sendStream(res: http.ServerResponse, model: string, a: Answer, index: number, script: StreamScript, withUsage: boolean, onFirstText: (at: number) => void): Promise<void> {
  const base = { id: `chatcmpl-fake-${index}`, object: 'chat.completion.chunk' as const, created: Math.floor(Date.now() / 1000), model };
  const chunks: ChatCompletionChunk[] = [];
  const delta = (d: ChatCompletionChunk.Choice.Delta, finish: ChatCompletionChunk.Choice['finish_reason'] = null): ChatCompletionChunk => ({
    ...base,
    choices: [{ index: 0, delta: d, finish_reason: finish, logprobs: null }],
  });
  chunks.push(delta({ role: 'assistant', content: '' }));
  // Split text and arguments so clients must really accumulate deltas.
  const textParts = script.textChunks ?? (a.text ? halves(a.text) : []);
  if (script.textChunks && script.textChunks.join('') !== (a.text ?? '')) throw new Error('stream.textChunks must join to the reply text');
  for (const part of textParts) chunks.push(delta({ content: part }));
  a.toolCalls.forEach((c, i) => {
    chunks.push(delta({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }));
    for (const part of halves(c.function.arguments)) chunks.push(delta({ tool_calls: [{ index: i, function: { arguments: part } }] }));
  });
  chunks.push(delta({}, a.toolCalls.length ? 'tool_calls' : 'stop'));
  if (withUsage) chunks.push({ ...base, choices: [], usage: a.usage });
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  let sentText = false;
  for (const [n, chunk] of chunks.entries()) {
    if (script.breakAfter && n === script.breakAfter.chunks) {
      const how = script.breakAfter.how;
      // Ending the socket (not destroying it) first delivers what was written, then cuts off mid-body.
      if (how === 'drop') res.socket?.end();
      else if (how === 'event') res.end(`data: ${JSON.stringify({ error: { message: 'fake mid-stream failure', type: 'server_error' } })}\n\n`);
      return; // 'hang': nothing more is sent
    }
    if (res.destroyed) return;
    const text = chunk.choices[0]?.delta.content;
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    if (text && !sentText) {
      sentText = true;
      onFirstText(Date.now());
    }
    if (script.chunkDelayMs) await new Promise((r) => setTimeout(r, script.chunkDelayMs));
  }
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}

function halves(s: string): string[] {
  if (s.length < 2) return [s];
  const mid = Math.floor(s.length / 2);
  return [s.slice(0, mid), s.slice(mid)];
}

function sendJson(res: http.ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}
