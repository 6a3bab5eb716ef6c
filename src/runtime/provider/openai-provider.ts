import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { Logger } from '../../basics/log.js';
import { toJsonModeMessages } from './json-mode.js';
import { ModelError, type ModelProvider, type ModelRequest, type ModelResponse } from './provider.js';
import { classifyError, retryDelayMs, scrub, type ErrorContext, type Verdict } from './retry-policy.js';
import { fromSdkToolCalls, toSdkMessages, toSdkTools } from './sdk-messages.js';
import { wellFormed } from './well-formed.js';
import { readCompletionStream } from './stream-reader.js';
import { createVisibleTextFilter } from './visible-text.js';
import {
  hasHermesToolCalls,
  newCallId,
  parseBareJsonToolCalls,
  parseHermesToolCalls,
  parseJsonModeAnswer,
  stripThinking,
  type IdFactory,
} from './tool-text.js';
import { blankToNull } from '../../basics/values.js';
import { setTimeout as wait } from 'node:timers/promises';
import { callSignal } from './call-signal.js';
import { createKeepAliveFetch } from '../../basics/keep-alive-fetch.js';

export interface OpenAIProviderOptions {
  apiKey: string;
  baseURL?: string;
  model: string;
  temperature: number;
  maxTokens: number;
  /** One attempt's limit; the SDK's own 10-minute default is far too long for chat. */
  timeoutMs: number;
  /** Retries after the first attempt, for transient failures only. */
  maxRetries: number;
  toolMode: 'native' | 'json';
  log: Logger;
  /** Injected by tests to record waits instead of sleeping. Must reject when the signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  newId?: IdFactory;
}

/**
 * Some servers refuse a parameter outright (newer OpenAI models: `max_tokens` and non-default
 * `temperature`). Rather than making operators learn each model's quirks, the provider switches
 * once when the server names the parameter, and remembers it for later calls.
 */
interface WireCompat {
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  sendTemperature: boolean;
  /** Older compatible servers refuse `stream_options`; they then stream without a usage chunk. */
  sendStreamOptions: boolean;
}

/**
 * `shown`: visible text of this attempt already reached the caller. Such an attempt is not
 * retried: a second answer would be appended to the first half of another one on a person's screen.
 */
type Attempt = { ok: true; completion: ChatCompletion; shown: string } | { ok: false; verdict: Verdict; shown: string };

export function createOpenAIProvider(opts: OpenAIProviderOptions): ModelProvider {
  // keep-alive-fetch.ts: node:http under the SDK instead of the built-in fetch (a fifth of a reply's CPU).
  const client = new OpenAI({ apiKey: opts.apiKey, baseURL: opts.baseURL, maxRetries: 0, timeout: opts.timeoutMs, fetch: createKeepAliveFetch() });
  // node:timers/promises rejects with an AbortError when the signal fires, as `sleep` must.
  const sleep = opts.sleep ?? ((ms: number, signal?: AbortSignal) => wait(ms, undefined, { signal }));
  const random = opts.random ?? Math.random;
  const newId = opts.newId ?? newCallId;
  const errorContext: ErrorContext = { model: opts.model, baseURL: opts.baseURL, apiKey: opts.apiKey };
  const compat: WireCompat = { maxTokensField: 'max_tokens', sendTemperature: true, sendStreamOptions: true };
  const log = opts.log.child({ component: 'model', model: opts.model });

  async function attempt(request: ModelRequest): Promise<Attempt> {
    // One controller per call, aborted by the turn's signal or the timer (call-signal.ts: without
    // it each model call leaked its SDK controller, about 2 KB a turn, for the life of the process).
    const { controller: call, unlink } = callSignal(request.signal);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      call.abort();
    }, opts.timeoutMs);
    const filter = request.onText ? createVisibleTextFilter(opts.toolMode === 'json' ? { kind: 'json' } : { kind: 'native', toolNames: new Set(request.tools.map((t) => t.name)) }) : undefined;
    try {
      const requestOptions = { signal: call.signal, timeout: opts.timeoutMs, maxRetries: 0 };
      let completion: ChatCompletion;
      if (filter && request.onText) {
        const onText = request.onText;
        const body = buildBody(request);
        const stream = await client.chat.completions.create(streamingBody(body), requestOptions);
        const promptChars = JSON.stringify(body.messages).length;
        // The server accepted the request and may still break off mid-answer (an error event, a
        // dropped connection): as transient as a 502, so retried like one while nothing was shown.
        const brokeOff = (why: string): Attempt => ({ ok: false, verdict: { kind: 'retry', reason: `the answer broke off mid-stream (${why})` }, shown: filter.released });
        let read;
        try {
          read = await readCompletionStream(stream, (delta) => {
            const shown = filter.push(delta);
            if (shown) onText(shown);
          }, { promptChars, model: body.model });
        } catch (err) {
          if (call.signal.aborted) throw err;
          return brokeOff(scrub(err instanceof Error ? err.message : String(err), errorContext));
        }
        if (call.signal.aborted) throw new OpenAI.APIUserAbortError();
        if (!read.finished) return brokeOff('no finish reason');
        completion = read.completion;
      } else {
        completion = await client.chat.completions.create(buildBody(request), requestOptions);
      }
      const shown = filter?.released ?? '';
      if (!completion.choices?.[0]) return { ok: false, verdict: { kind: 'retry', reason: 'the server answered without a choice' }, shown };
      return { ok: true, completion, shown };
    } catch (err) {
      if (request.signal?.aborted) throw aborted();
      if (timedOut || err instanceof OpenAI.APIConnectionTimeoutError) {
        throw new ModelError('timeout', `The model did not answer within ${formatMs(opts.timeoutMs)} (HERMES_MODEL_TIMEOUT_MS).`);
      }
      return { ok: false, verdict: classifyError(err, errorContext), shown: filter?.released ?? '' };
    } finally {
      clearTimeout(timer);
      unlink();
    }
  }

  function buildBody(request: ModelRequest): ChatCompletionCreateParamsNonStreaming {
    const json = opts.toolMode === 'json';
    const messages = json ? toJsonModeMessages(request.messages, request.tools) : request.messages;
    const body: ChatCompletionCreateParamsNonStreaming = { model: request.model ?? opts.model, messages: toSdkMessages(messages, request.imageData) };
    body[compat.maxTokensField] = request.maxTokens ?? opts.maxTokens;
    if (compat.sendTemperature) body.temperature = opts.temperature;
    if (!json && request.tools.length > 0) body.tools = toSdkTools(request.tools);
    return body;
  }

  function streamingBody(body: ChatCompletionCreateParamsNonStreaming): ChatCompletionCreateParamsStreaming {
    return { ...body, stream: true, ...(compat.sendStreamOptions && { stream_options: { include_usage: true } }) };
  }

  /** True when the request was changed so that repeating it can succeed. */
  function adaptToRefusal(error: ModelError, streaming: boolean): boolean {
    if (error.status !== 400) return false;
    const text = error.message;
    if (streaming && compat.sendStreamOptions && /stream_options|include_usage/.test(text)) {
      compat.sendStreamOptions = false;
    } else if (compat.maxTokensField === 'max_tokens' && /max_tokens/.test(text) && /max_completion_tokens/.test(text)) {
      compat.maxTokensField = 'max_completion_tokens';
    } else if (compat.sendTemperature && /temperature/i.test(text) && /(unsupported|not support|only the default)/i.test(text)) {
      compat.sendTemperature = false;
    } else {
      return false;
    }
    log.info({ compat }, 'model server refused a parameter; adjusted the request');
    return true;
  }

  async function complete(request: ModelRequest): Promise<ModelResponse> {
    const attempts = opts.maxRetries + 1;
    let adjustments = 0;
    let lastReason = '';
    for (let n = 1; n <= attempts; n++) {
      if (request.signal?.aborted) throw aborted();
      const started = Date.now();
      const result = await attempt(request);
      if (result.ok) {
        const response = toModelResponse(result.completion, request);
        log.debug({ attempt: n, latencyMs: Date.now() - started, usage: response.usage, toolCalls: response.toolCalls.length, streamed: request.onText !== undefined }, 'model call');
        if (request.onText) releaseRest(request.onText, result.shown, response);
        return response;
      }
      const verdict = result.verdict;
      if (result.shown !== '') {
        // Half an answer is on a person's screen: a retry would write a different one after it.
        const reason = scrub(verdict.kind === 'fail' ? verdict.error.message : verdict.reason, errorContext);
        log.warn({ attempt: n, reason }, 'model stream broke off after text was shown');
        throw new ModelError('transient', `The model server broke off its answer: ${reason}.`, undefined, reason);
      }
      if (verdict.kind === 'fail') {
        if (adjustments < 3 && adaptToRefusal(verdict.error, request.onText !== undefined)) {
          adjustments += 1;
          n -= 1; // an adjusted request is a new request, not a retry; bounded: each flag flips once (three flags)
          continue;
        }
        log.warn({ attempt: n, status: verdict.error.status, kind: verdict.error.kind, reason: verdict.error.message }, 'model call failed');
        throw verdict.error;
      }
      lastReason = verdict.reason;
      if (n === attempts) break;
      const waitMs = retryDelayMs(n, verdict.retryAfterMs, random);
      log.warn({ attempt: n, reason: scrub(verdict.reason, errorContext), waitMs }, 'model call failed; retrying');
      try {
        await sleep(waitMs, request.signal);
      } catch (err) {
        if (request.signal?.aborted) throw aborted();
        throw err;
      }
    }
    const last = scrub(lastReason, errorContext);
    throw new ModelError('transient', `The model server did not answer after ${attempts} attempt${attempts === 1 ? '' : 's'}; last error: ${last}.`, undefined, last);
  }

  function toModelResponse(completion: ChatCompletion, request: ModelRequest): ModelResponse {
    const choice = completion.choices[0]!;
    const usage = { promptTokens: completion.usage?.prompt_tokens ?? 0, completionTokens: completion.usage?.completion_tokens ?? 0 };
    const base = { usage, finishReason: choice.finish_reason ?? 'unknown', model: completion.model || request.model || opts.model };
    const text = choice.message.content == null ? null : blankToNull(stripThinking(wellFormed(choice.message.content)));
    const native = fromSdkToolCalls(choice.message, newId);
    if (native.toolCalls.length > 0 || native.parseErrors.length > 0) return { ...base, content: text, ...native };
    // Only an answer in text can be a call written as text: the offered names are needed from here on.
    const toolNames = new Set(request.tools.map((t) => t.name));
    if (opts.toolMode === 'json') return { ...base, ...parseJsonModeAnswer(text ?? '', newId, toolNames) };
    if (text !== null && hasHermesToolCalls(text)) return { ...base, ...parseHermesToolCalls(text, newId) };
    const bare = text !== null && toolNames.size > 0 ? parseBareJsonToolCalls(text, toolNames, newId) : null;
    if (bare) return { ...base, ...bare };
    return { ...base, content: text, toolCalls: [], parseErrors: [] };
  }

  return { model: opts.model, complete };
}

/**
 * At the end of a streamed call, the visible text the filter still held (a bare answer that
 * turned out not to be a call, JSON mode's final answer, trailing whitespace dropped by the trim)
 * is passed on. Not when the model's tool-call text could not be read: that content goes back to
 * the model with the error, never to a person.
 */
function releaseRest(onText: (delta: string) => void, shown: string, response: ModelResponse): void {
  if (response.parseErrors.length > 0 || response.content === null) return;
  if (response.content.startsWith(shown) && response.content.length > shown.length) onText(response.content.slice(shown.length));
}

function aborted(): ModelError {
  return new ModelError('aborted', 'The model call was cancelled.');
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
