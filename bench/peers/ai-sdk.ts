import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { z } from 'zod';
import { API_KEY, MAX_STEPS, MODEL, type PeerModule } from './peer-api.js';

/** The AI SDK's generateText with the OpenAI provider's Chat Completions model. */
export const peer: PeerModule = {
  name: 'AI SDK (ai)',
  packages: ['ai', '@ai-sdk/openai'],
  sessionNote: 'generateText with messages = previous messages + response.messages + the new user message (the documented chatbot pattern)',
  async create(baseURL, tools, instructions) {
    const model = createOpenAI({ apiKey: API_KEY, baseURL }).chat(MODEL);
    const toolSet = Object.fromEntries(
      tools.map((t) => [
        t.name,
        tool({
          description: t.description,
          inputSchema: z.object({ [t.argName]: z.string() }),
          execute: async (args: Record<string, string>) => t.run(args[t.argName] ?? ''),
        }),
      ]),
    );
    let messages: ModelMessage[] = [];
    const call = (msgs: ModelMessage[]) =>
      generateText({ model, system: instructions, messages: msgs, tools: toolSet, stopWhen: stepCountIs(MAX_STEPS), maxRetries: 0, abortSignal: AbortSignal.timeout(30_000) });
    return {
      async askFresh(text) {
        return (await call([{ role: 'user', content: text }])).text;
      },
      async ask(text) {
        const next: ModelMessage[] = [...messages, { role: 'user', content: text }];
        const result = await call(next);
        messages = [...next, ...result.response.messages];
        return result.text;
      },
    };
  },
};
