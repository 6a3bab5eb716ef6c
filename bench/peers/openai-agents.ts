import OpenAI from 'openai';
import { z } from 'zod';
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool, type AgentInputItem } from '@openai/agents';
import { API_KEY, MAX_STEPS, MODEL, type PeerModule } from './peer-api.js';

/** @openai/agents with its Chat Completions model (the fake speaks that API), tracing export off. */
export const peer: PeerModule = {
  name: '@openai/agents',
  packages: ['@openai/agents', 'openai'],
  sessionNote: 'run() with the previous result.history plus the new user message (the documented way to continue a conversation)',
  async create(baseURL, tools, instructions) {
    // A model bound to this client, not the global default client: the SDK's default provider
    // caches the first client it sees, and each bench section has its own fake server.
    const client = new OpenAI({ apiKey: API_KEY, baseURL, maxRetries: 0, timeout: 30_000 });
    setTracingDisabled(true);
    const agent = new Agent({
      name: 'bench',
      instructions,
      model: new OpenAIChatCompletionsModel(client, MODEL),
      tools: tools.map((t) =>
        tool({
          name: t.name,
          description: t.description,
          parameters: z.object({ [t.argName]: z.string() }),
          execute: async (args: Record<string, string>) => t.run(args[t.argName] ?? ''),
        }),
      ),
    });
    let history: AgentInputItem[] = [];
    return {
      async askFresh(text) {
        const result = await run(agent, text, { maxTurns: MAX_STEPS });
        return String(result.finalOutput ?? '');
      },
      async ask(text) {
        const result = await run(agent, [...history, { role: 'user', content: text }], { maxTurns: MAX_STEPS });
        history = result.history;
        return String(result.finalOutput ?? '');
      },
    };
  },
};
