/**
 * A Slack reply's outbound calls as the bot makes them, for bench/ab-reply-calls.ts: one model call
 * through our provider, then the working reaction, the answer and the reaction's removal through
 * our Slack client (adapters/slack/slack-calls.ts). Copied into another checkout unchanged, it
 * measures that checkout's provider and client.
 */
import pino from 'pino';
import { createOpenAIProvider } from '../src/runtime/provider/openai-provider.js';
import { createOutboundClient } from '../adapters/slack/slack-calls.js';
import { toSlackLogger } from '../adapters/slack/slack-logger.js';

export function replyCalls(aiUrl: string, slackApiUrl: string, botToken: string): () => Promise<void> {
  const log = pino({ level: 'info' }, pino.destination('/dev/null'));
  const provider = createOpenAIProvider({ apiKey: 'k', baseURL: aiUrl, model: 'gpt-4o-mini', temperature: 0.2, maxTokens: 512, timeoutMs: 30_000, maxRetries: 0, toolMode: 'native', log });
  const client = createOutboundClient(botToken, slackApiUrl, toSlackLogger(log));
  const messages = [
    { role: 'system' as const, content: 'You are a helpful assistant in a Slack workspace. '.repeat(20) },
    { role: 'user' as const, content: 'What is the capital of France, and why?' },
  ];
  const tools = [{ name: 'lookup', description: 'Looks a value up.', parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] } }];
  let n = 0;
  return async () => {
    const ts = `1700000000.${String(++n).padStart(6, '0')}`;
    const signal = new AbortController().signal;
    await client.reactions.add({ channel: 'C1', timestamp: ts, name: 'hourglass_flowing_sand' });
    const answer = await provider.complete({ messages, tools, signal });
    await client.chat.postMessage({ channel: 'C1', thread_ts: ts, text: answer.content ?? '', mrkdwn: true, unfurl_links: false, unfurl_media: false });
    await client.reactions.remove({ channel: 'C1', timestamp: ts, name: 'hourglass_flowing_sand' });
  };
}
