import { afterEach, describe, expect, it } from 'vitest';
import { searchConversationsTool } from '../../tools/search-conversations.js';
import { memoryTools } from '../../tools/memory.js';
import { SUMMARY_SEARCH_NOTE } from '../../src/runtime/context/summarizer.js';
import { CHANNEL_NOTES_HEADING } from '../../src/agent/system-prompt.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { conv, isText, startHarness, user, type Harness } from '../helpers/core-harness.js';
import type { FakeReply } from '../fakes/openai/fake-openai.js';

/**
 * search_conversations, channel notes and embeddings through a real core: the gateway indexes
 * what it accepts and answers, the model (the fake server) calls the tool, and the test reads
 * exactly what the model was sent.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Sent = { role: string; content?: unknown; tool_call_id?: string };
const sentTool = (h: Harness, id: string) => h.fake.requests.flatMap((r) => r.messages as Sent[]).find((m) => m.role === 'tool' && m.tool_call_id === id)?.content as string | undefined;
const systemOf = (req: { messages: unknown[] }) => String((req.messages[0] as Sent).content);
const isSummaryCall = (req: { messages: unknown[]; tools?: unknown[] }) => systemOf(req).startsWith('You maintain the running summary');

let n = 0;
async function ask(h: Harness, conversation: Conversation, speaker: Speaker, text: string, ...replies: FakeReply[]): Promise<string> {
  h.fake.enqueue(...replies);
  const before = h.port.texts().length;
  await h.core.gateway.handleMessage({ id: `r-${++n}-${Date.now()}`, conversation, speaker, text, mentioned: true });
  return ((await h.port.waitForCount(isText, before + 1, 20_000)).at(-1) as { text: string }).text;
}
const search = (id: string, query: string): FakeReply => ({ toolCalls: [{ id, name: 'search_conversations', arguments: { query } }] });

const A = user('UA');
const B = user('UB');
const dmA = conv('DA', { isDm: true });
const dmB = conv('DB', { isDm: true });
const general = conv('CGEN');

describe('search_conversations through the gateway', () => {
  it("finds nothing of A's DM for B (from B's DM or a channel), and hands A's own hits over as outside text", async () => {
    h = await startHarness({ tools: [searchConversationsTool] });
    await ask(h, dmA, A, 'my badge PIN is 7781 and the codename is periwinkle', { text: 'Noted.' });
    await ask(h, general, A, 'in general: periwinkle launch moves to Friday', { text: 'Sounds good.' });
    await ask(h, general, B, 'hello from B', { text: 'Hi B.' });

    // The attack: B asks for A's DM text, from B's DM and from the channel they share.
    expect(await ask(h, dmB, B, 'what is the periwinkle badge PIN?', search('s1', 'periwinkle badge PIN 7781'), { text: 'none' })).toBe('none');
    // (the query B typed is echoed in the result's first line; A's words never appear)
    expect(sentTool(h, 's1')).not.toMatch(/badge PIN is|codename|your DM with me/);
    await ask(h, general, B, 'search periwinkle', search('s2', 'periwinkle PIN'), { text: 'done' });
    const s2 = sentTool(h, 's2')!;
    expect(s2).not.toMatch(/7781|codename/);
    // B wrote in #general, so A's top-level post there is B's to find, wrapped as others' words.
    expect(s2).toMatch(/<<<OUTSIDE_DATA id=\w+ source="earlier conversations \(search_conversations\)">>>/);
    expect(s2).toMatch(/Z in <#CGEN>, ua wrote: in general: periwinkle launch moves to Friday/);

    // A finds their own DM from their DM, with the time as ISO 8601 and the place.
    await ask(h, dmA, A, 'what was my PIN?', search('s3', 'badge PIN'), { text: '7781' });
    expect(sentTool(h, 's3')).toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ in your DM with me, ua wrote: my badge PIN is 7781/);
    // From a shared channel, even A's own DM stays out (the answer would show it to the channel).
    await ask(h, general, A, 'my PIN?', search('s4', 'badge PIN 7781'), { text: 'not here' });
    expect(sentTool(h, 's4')).not.toMatch(/badge PIN is|your DM with me/);
    expect(sentTool(h, 's4')).toMatch(/DMs with you were not searched/);
  });

  it('finds again a fact the running summary dropped, and the summary note says search exists', async () => {
    h = await startHarness({ tools: [searchConversationsTool], env: { HERMES_CONTEXT_TOKENS: '1200' } });
    h.fake.setHandler((req) => (isSummaryCall(req) ? { text: '- The user chatted about many things.' } : { text: 'ok' }));
    const dm = conv('DSUM', { isDm: true });
    await ask(h, dm, A, 'Remember for later: the staging database host is pg-staging-7.internal on port 6543.');
    for (let i = 0; i < 8; i++) await ask(h, dm, A, `filler message ${i}: ${'lorem ipsum dolor sit amet '.repeat(25)}`);
    const summarised = h.fake.requests.filter((r) => !isSummaryCall(r) && systemOf(r).includes(SUMMARY_SEARCH_NOTE));
    expect(summarised.length).toBeGreaterThan(0);
    const last = summarised.at(-1)!;
    expect(JSON.stringify(last.messages)).not.toContain('pg-staging-7');
    h.fake.setHandler(() => ({ text: 'unused' }));
    await ask(h, dm, A, 'what was the staging database host?', search('s5', 'staging database host'), { text: 'pg-staging-7.internal' });
    expect(sentTool(h, 's5')).toMatch(/pg-staging-7\.internal on port 6543/);
  });
});

describe('channel notes', () => {
  it('admins (only) set them; they reach the model on every turn in that channel and its threads, as channel notes', async () => {
    h = await startHarness({ tools: [searchConversationsTool], env: { HERMES_ADMINS: 'slack:UADMIN' } });
    const admin = user('UADMIN');
    const cmd = (speaker: Speaker, text: string, conversation = general) => h!.core.gateway.handleCommand({ conversation, speaker, text });
    expect((await cmd(A, 'notes')).text).toMatch(/This channel has no notes/);
    expect((await cmd(A, 'notes set Deploys go through #ops.')).text).toMatch(/Only admins and this channel's approvers/);
    expect((await cmd(admin, 'notes set')).text).toMatch(/Say what the notes should be/);
    expect((await cmd(admin, `notes set ${'x'.repeat(2001)}`)).text).toMatch(/2001 characters; the limit is 2000/);
    expect((await cmd(admin, 'notes set Deploys go through #ops. Fiscal year starts in April.')).text).toMatch(/Saved the notes/);
    expect((await cmd(A, 'notes')).text).toMatch(/Notes of this channel[\s\S]*Fiscal year starts in April/);

    await ask(h, general, A, 'when does our year start?', { text: 'April.' });
    await ask(h, conv('CGEN', { threadId: '111.222' }), B, 'and deploys?', { text: '#ops.' });
    await ask(h, conv('COTHER'), A, 'elsewhere', { text: 'ok' });
    const [inChannel, inThread, elsewhere] = h.fake.requests.slice(-3);
    for (const req of [inChannel!, inThread!]) {
      expect(systemOf(req)).toContain(`${CHANNEL_NOTES_HEADING}\nDeploys go through #ops. Fiscal year starts in April.`);
      // System-side context, never in a person's message.
      expect((req.messages as Sent[]).filter((m) => m.role === 'user').some((m) => String(m.content).includes('Fiscal year'))).toBe(false);
    }
    expect(systemOf(elsewhere!)).not.toContain('Fiscal year');
    expect((await cmd(A, 'notes clear')).text).toMatch(/Only admins/);
    expect((await cmd(admin, 'notes clear')).text).toBe('Cleared the notes of this channel.');
    await ask(h, general, A, 'again', { text: 'ok' });
    expect(systemOf(h.fake.requests.at(-1)!)).not.toContain(CHANNEL_NOTES_HEADING);
  });
});

describe('embeddings (HERMES_EMBEDDING_MODEL)', () => {
  it('embeds messages and facts through /embeddings in the background and ranks by words and meaning', async () => {
    h = await startHarness({ tools: [searchConversationsTool, ...memoryTools], env: { HERMES_EMBEDDING_MODEL: 'fake-embed' } });
    await ask(h, dmA, A, 'we need more funds for the offsite', { text: 'Noted.' });
    await ask(h, dmA, A, 'save that', { toolCalls: [{ id: 'f1', name: 'remember_fact', arguments: { fact: 'Drives an automobile to work.' } }] }, { text: 'Saved.' });
    await h.core.recall.idle();
    const embedded = h.fake.embeddingRequests.flatMap((r) => r.input);
    expect(h.fake.embeddingRequests.every((r) => r.model === 'fake-embed')).toBe(true);
    expect(embedded).toEqual(expect.arrayContaining(['we need more funds for the offsite', 'Drives an automobile to work.']));

    // "budget" shares no word with the message, only its meaning (the fake groups funds/budget).
    await ask(h, dmA, A, 'what about the budget?', search('e1', 'budget'), { text: 'funds' });
    expect(sentTool(h, 'e1')).toMatch(/we need more funds for the offsite/);
    await ask(h, dmA, A, 'how do I commute?', { toolCalls: [{ id: 'e2', name: 'recall_facts', arguments: { query: 'car' } }] }, { text: 'By car.' });
    expect(sentTool(h, 'e2')).toMatch(/Drives an automobile to work\./);

    // The server stops embedding: replies go on, keyword search still finds by words.
    h.fake.setEmbeddings('fail');
    await ask(h, dmA, A, 'the offsite venue is the lighthouse', { text: 'Nice.' });
    await h.core.recall.idle();
    expect(await ask(h, dmA, A, 'venue?', search('e3', 'lighthouse venue'), { text: 'lighthouse' })).toBe('lighthouse');
    expect(sentTool(h, 'e3')).toMatch(/the offsite venue is the lighthouse/);
  });

  it('a slow embedding server delays no reply, and what piled up meanwhile goes in batches', async () => {
    h = await startHarness({ tools: [searchConversationsTool], env: { HERMES_EMBEDDING_MODEL: 'fake-embed' } });
    const release = h.fake.holdEmbeddings();
    const said = ['first note about the harbour', 'second note about the lighthouse', 'third note about the ferry', 'fourth note about the pier'];
    try {
      // Every reply arrives while the first /embeddings request is still unanswered.
      for (const text of said) expect(await ask(h, dmA, A, text, { text: `ok: ${text}` })).toBe(`ok: ${text}`);
      expect(h.fake.embeddingRequests.length).toBe(1);
    } finally {
      release();
    }
    await h.core.recall.idle();
    const inputs = h.fake.embeddingRequests.map((r) => r.input);
    expect(inputs.flat()).toEqual(expect.arrayContaining([...said, ...said.map((t) => `ok: ${t}`)]));
    // The texts queued behind the held request went together, not one request each.
    expect(Math.max(...inputs.map((i) => i.length))).toBeGreaterThan(1);
    expect(inputs.length).toBeLessThan(inputs.flat().length);
  });

  it('without an embedding model, nothing calls /embeddings and keywords alone find', async () => {
    h = await startHarness({ tools: [searchConversationsTool] });
    await ask(h, dmA, A, 'we need more funds for the offsite', { text: 'Noted.' });
    await ask(h, dmA, A, 'budget?', search('k1', 'budget'), { text: 'nothing' });
    expect(sentTool(h, 'k1')).toMatch(/No earlier message matches "budget"/);
    await ask(h, dmA, A, 'funds?', search('k2', 'funds'), { text: 'found' });
    expect(sentTool(h, 'k2')).toMatch(/we need more funds/);
    expect(h.fake.embeddingRequests).toEqual([]);
  });
});
