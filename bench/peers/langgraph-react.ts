import { ChatOpenAI } from '@langchain/openai';
import { MemorySaver } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { API_KEY, MAX_STEPS, MODEL, type PeerModule } from './peer-api.js';
import { langchainTools } from './langchain.js';

/** LangGraph's prebuilt createReactAgent, the ReAct agent most LangChain.js tutorials still use. */
export const peer: PeerModule = {
  name: 'LangGraph.js (createReactAgent)',
  packages: ['@langchain/langgraph', '@langchain/core', '@langchain/openai'],
  sessionNote: 'createReactAgent with a MemorySaver checkpointer and one thread_id',
  async create(baseURL, tools, instructions) {
    const llm = () => new ChatOpenAI({ model: MODEL, apiKey: API_KEY, configuration: { baseURL }, maxRetries: 0, timeout: 30_000 });
    const lcTools = langchainTools(tools);
    const fresh = createReactAgent({ llm: llm(), tools: lcTools, prompt: instructions });
    const kept = createReactAgent({ llm: llm(), tools: lcTools, prompt: instructions, checkpointSaver: new MemorySaver() });
    const limit = { recursionLimit: MAX_STEPS * 2 + 1 };
    const text = (out: { messages: Array<{ content: unknown }> }) => {
      const c = out.messages.at(-1)?.content;
      return typeof c === 'string' ? c : JSON.stringify(c ?? '');
    };
    return {
      askFresh: async (t) => text(await fresh.invoke({ messages: [{ role: 'user', content: t }] }, limit)),
      ask: async (t) => text(await kept.invoke({ messages: [{ role: 'user', content: t }] }, { ...limit, configurable: { thread_id: 'bench' } })),
    };
  },
};
