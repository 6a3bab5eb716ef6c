import { ChatOpenAI } from '@langchain/openai';
import { createAgent, tool } from 'langchain';
import { MemorySaver } from '@langchain/langgraph';
import { z } from 'zod';
import { API_KEY, MAX_STEPS, MODEL, type PeerModule, type PeerTool } from './peer-api.js';

function chatModel(baseURL: string): ChatOpenAI {
  return new ChatOpenAI({ model: MODEL, apiKey: API_KEY, configuration: { baseURL }, maxRetries: 0, timeout: 30_000 });
}

export function langchainTools(tools: PeerTool[]) {
  return tools.map((t) =>
    tool(async (args: Record<string, string>) => t.run(args[t.argName] ?? ''), {
      name: t.name,
      description: t.description,
      schema: z.object({ [t.argName]: z.string() }),
    }),
  );
}

const lastText = (messages: Array<{ content: unknown }>): string => {
  const c = messages.at(-1)?.content;
  return typeof c === 'string' ? c : JSON.stringify(c ?? '');
};

/** LangChain v1 createAgent (the LangGraph-based successor of createReactAgent). */
export const peer: PeerModule = {
  name: 'LangChain.js (createAgent)',
  packages: ['langchain', '@langchain/core', '@langchain/openai', '@langchain/langgraph'],
  sessionNote: 'createAgent with a MemorySaver checkpointer and one thread_id (the documented short-term memory)',
  async create(baseURL, tools, instructions) {
    const lcTools = langchainTools(tools);
    const fresh = createAgent({ model: chatModel(baseURL), tools: lcTools, systemPrompt: instructions });
    const kept = createAgent({ model: chatModel(baseURL), tools: lcTools, systemPrompt: instructions, checkpointer: new MemorySaver() });
    const limit = { recursionLimit: MAX_STEPS * 2 + 1 };
    return {
      async askFresh(text) {
        const out = await fresh.invoke({ messages: [{ role: 'user', content: text }] }, limit);
        return lastText(out.messages);
      },
      async ask(text) {
        const out = await kept.invoke({ messages: [{ role: 'user', content: text }] }, { ...limit, configurable: { thread_id: 'bench' } });
        return lastText(out.messages);
      },
    };
  },
};
