import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createCore } from '../src/app/app.js';
import { loadConfig } from '../src/settings/load-config.js';
import { createSlackAdapter } from '../adapters/slack/slack-adapter.js';
import { createBotHttp } from '../src/app/bot-http.js';
import { createReceiptJournal } from '../src/gateway/receipts.js';
import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { startFakeSlack, type FakeSlack } from '../test/fakes/slack/fake-slack.js';
import { median, percentile, round, withDeadline } from './stats.js';

/**
 * Answers shown as they are written (Slack), measured from the outside: the real core and Slack
 * adapter in this process against the fake Slack and the fake model, which streams its answer in
 * chunks as a model writes.
 *
 * - Time to first visible text: from the moment the fake model wrote the first text of its answer
 *   to its socket to the moment the fake Slack received the call that shows it (chat.startStream
 *   with that text). Everything in between is ours (the openai SDK's stream parsing, the turn's sink,
 *   the adapter, one local HTTP call).
 * - Platform calls per answer: every Web API call a turn made, with streaming on and with it off
 *   (one chat.postMessage), for the same scripted answers; the difference is what streaming costs.
 */
export interface StreamingSizes {
  /** Answers measured, after one unmeasured warm-up answer (first connections, lazy loading). */
  turns: number;
  /** Pieces the model writes its answer in, and the pause between them. */
  chunks: number;
  chunkDelayMs: number;
}

export interface StreamingResult {
  sizes: StreamingSizes;
  firstVisibleP50Ms: number;
  firstVisibleP95Ms: number;
  firstVisibleMaxMs: number;
  callsPerAnswerStreamed: number;
  callsPerAnswerPosted: number;
  extraCallsPerAnswer: number;
  /** Which calls a streamed answer made, e.g. {"chat.startStream": 1, "chat.appendStream": 3, …}, per answer. */
  streamedCallMix: Record<string, number>;
  errors: string[];
}

const ANSWER_WORDS = 'Here is the answer, written in pieces the way a model streams it, with enough words to need several appends before it ends.'.split(' ');

function answerChunks(n: number): string[] {
  const per = Math.ceil(ANSWER_WORDS.length / n);
  return Array.from({ length: n }, (_, i) => ANSWER_WORDS.slice(i * per, (i + 1) * per).join(' ') + (i < n - 1 ? ' ' : '')).filter((c) => c !== '');
}

interface RunOutcome {
  firstVisibleMs: number[];
  callsPerAnswer: number[];
  mix: Record<string, number>;
}

async function runOnce(sizes: StreamingSizes, streaming: boolean, log: (line: string) => void): Promise<RunOutcome> {
  const slack = await startFakeSlack();
  const ai = await startFakeOpenAI();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-bench-stream-'));
  const chunks = answerChunks(sizes.chunks);
  ai.setHandler(() => ({ text: chunks.join(''), stream: { textChunks: chunks, chunkDelayMs: sizes.chunkDelayMs } }));
  const loaded = loadConfig({
    OPENAI_BASE_URL: ai.url,
    OPENAI_API_KEY: 'bench',
    HERMES_MODEL_RETRIES: '0',
    HERMES_DATA_DIR: dataDir,
    SLACK_BOT_TOKEN: slack.botToken,
    SLACK_SIGNING_SECRET: slack.signingSecret,
    SLACK_API_URL: slack.apiUrl,
    HERMES_STREAMING: streaming ? 'on' : 'off',
    HERMES_GROUNDING: 'off',
    // One person asks every question here, faster than the default 20 a minute allows.
    HERMES_USER_RATE: '0',
    PORT: '0',
  }, dataDir);
  if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
  const config = loaded.config;
  const quiet = pino({ level: 'silent' });
  const core = await createCore({ config, log: quiet, reminders: false });
  let ready = false;
  const http = createBotHttp({ log: quiet, isReady: () => ready });
  const adapter = await createSlackAdapter({ config: config.slack!, http, gateway: core.gateway, database: core.database, receipts: createReceiptJournal(core.database, 'slack'), log: quiet, retries: 0 });
  const port = await http.start(0, '127.0.0.1');
  await adapter.start();
  await core.start();
  ready = true;
  const target = `http://127.0.0.1:${port}/slack/events`;
  const out: RunOutcome = { firstVisibleMs: [], callsPerAnswer: [], mix: {} };
  try {
    for (let i = -1; i < sizes.turns; i++) {
      const before = slack.calls.length;
      const textsBefore = ai.firstTextAt.length;
      const ts = slack.nextTs();
      const channel = `C${i + 1}`;
      const res = await slack.sendEvent(target, { type: 'app_mention', user: 'U1', text: `<@${slack.botUserId}> question ${i}`, ts, channel });
      if (res.status !== 200) throw new Error(`the bot answered ${res.status} to a mention`);
      await withDeadline(`answer ${i}`, 30_000, () => slack.waitFor(`answer ${i}`, () => answered(slack, channel, ts, streaming), 30_000));
      await core.gateway.idle();
      const calls = slack.calls.slice(before).filter((c) => c.args.channel === channel || c.args.channel_id === channel);
      if (i < 0) continue;
      out.callsPerAnswer.push(calls.length);
      for (const c of calls) out.mix[c.method] = (out.mix[c.method] ?? 0) + 1;
      const firstText = ai.firstTextAt[textsBefore];
      const shown = calls.find((c) => c.method === 'chat.startStream' || c.method === 'chat.appendStream' || c.method === 'chat.postMessage');
      if (streaming && firstText !== undefined && shown) out.firstVisibleMs.push(shown.at - firstText);
    }
  } finally {
    ready = false;
    await adapter.stop();
    await http.stop();
    await core.close();
    await Promise.all([slack.close(), ai.close()]);
    await rm(dataDir, { recursive: true, force: true });
  }
  log(`  streaming ${streaming ? 'on' : 'off'}: ${sizes.turns} answers, ${round(median(out.callsPerAnswer))} calls each (median)`);
  return out;
}

function answered(slack: FakeSlack, channel: string, ts: string, streaming: boolean): boolean {
  if (streaming) return slack.streams().some((s) => s.channel === channel && s.thread_ts === ts && s.state === 'stopped');
  return slack.posts({ channel, thread_ts: ts }).length > 0;
}

export async function runStreaming(sizes: StreamingSizes, log: (line: string) => void): Promise<StreamingResult> {
  const streamed = await runOnce(sizes, true, log);
  const posted = await runOnce(sizes, false, log);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const perAnswer = Object.fromEntries(Object.entries(streamed.mix).map(([k, v]) => [k, round(v / sizes.turns)]));
  return {
    sizes,
    firstVisibleP50Ms: round(median(streamed.firstVisibleMs)),
    firstVisibleP95Ms: round(percentile(streamed.firstVisibleMs, 95)),
    firstVisibleMaxMs: round(Math.max(...streamed.firstVisibleMs)),
    callsPerAnswerStreamed: round(mean(streamed.callsPerAnswer)),
    callsPerAnswerPosted: round(mean(posted.callsPerAnswer)),
    extraCallsPerAnswer: round(mean(streamed.callsPerAnswer) - mean(posted.callsPerAnswer)),
    streamedCallMix: perAnswer,
    errors: streamed.firstVisibleMs.length < sizes.turns ? [`streaming: only ${streamed.firstVisibleMs.length} of ${sizes.turns} answers were seen streaming`] : [],
  };
}
