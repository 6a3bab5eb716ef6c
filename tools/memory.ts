import * as z from 'zod';
import { defineTool, type FactView } from '../src/capabilities/toolkit/tool-api.js';

/**
 * remember_fact / recall_facts / forget_fact. ctx.facts is already scoped to the verified speaker,
 * so no tool can read or change another person's facts. Store errors (a secret, too long, memory
 * full) are thrown with text written for the model and reach it as "<tool> failed: …".
 */

function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function factLine(f: FactView): string {
  return `${f.id}: ${f.text} (saved ${day(f.createdAt)}${f.updatedAt !== f.createdAt ? `, updated ${day(f.updatedAt)}` : ''})`;
}

export const rememberFactTool = defineTool({
  name: 'remember_fact',
  description:
    'Save a long-term fact about the user who is speaking, shown to you in their future conversations. Use for ' +
    'durable preferences, standing instructions and facts about their work ("prefers answers in German", "is on ' +
    'the payments team"). Not for chit-chat, one-off requests or secrets. Write it as one short sentence about the user.',
  input: z.object({
    fact: z.string().min(1).describe('One short self-contained sentence, e.g. "Prefers metric units."'),
  }),
  category: 'memory',
  effect: 'durable',
  private: true,
  async run({ fact }, ctx) {
    const { fact: saved, merged } = await ctx.facts.remember(fact);
    return merged
      ? `Updated existing fact ${saved.id} (it said nearly the same), now: ${saved.text}`
      : `Saved fact ${saved.id}: ${saved.text}`;
  },
});

export const recallFactsTool = defineTool({
  name: 'recall_facts',
  description:
    "Search the long-term facts saved about the user who is speaking. Without a query, lists them (newest first). " +
    'Returns each fact with its id, which forget_fact needs.',
  input: z.object({
    query: z.string().optional().describe('Words to look for, e.g. "timezone" or "deploy"; omit to list all.'),
  }),
  category: 'memory',
  private: true,
  maxResultChars: 8_000,
  async run({ query }, ctx) {
    const facts = await ctx.facts.recall(query);
    if (facts.length > 0) {
      const head = query?.trim() ? `Facts matching "${query.trim()}" (${facts.length}):` : `Saved facts (${facts.length}):`;
      return [head, ...facts.map(factLine)].join('\n');
    }
    if (!query?.trim()) return 'No facts are saved for this user.';
    const any = (await ctx.facts.recall(undefined, 1)).length > 0;
    return any
      ? `No saved fact matches "${query.trim()}". Call recall_facts without a query to list them all.`
      : 'No facts are saved for this user.';
  },
});

export const forgetFactTool = defineTool({
  name: 'forget_fact',
  description:
    'Delete a long-term fact about the user who is speaking, by its id (from recall_facts), or every one of their ' +
    'facts with "all". Only when the user asks to forget something or a fact is wrong or outdated.',
  input: z.object({
    id: z.string().min(1).describe('A fact id such as "f1a2b3", or "all".'),
  }),
  category: 'memory',
  effect: 'durable',
  private: true,
  async run({ id }, ctx) {
    const target = id.trim();
    const n = await ctx.facts.forget(target);
    if (target.toLowerCase() === 'all') return n > 0 ? `Forgot all ${n} facts about this user.` : 'There were no facts to forget.';
    return n > 0 ? `Forgot fact ${target}.` : `No fact with id "${target}" exists for this user; call recall_facts to see the ids.`;
  },
});

export const memoryTools = [rememberFactTool, recallFactsTool, forgetFactTool];
