import { afterEach, describe, expect, it } from 'vitest';
import type { APIMessage, RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { calculator } from '../../tools/calculator.js';
import { delegateTool } from '../../tools/delegate.js';
import { resolveProfiles } from '../../src/settings/agent-profiles.js';
import type { FakeOpenAI, FakeReply } from '../fakes/openai/fake-openai.js';
import { DEFAULT_USER } from '../fakes/discord/fake-discord.js';
import { startSlackHarness, type SlackHarness } from '../slack/slack-harness.js';
import { startBot, type Bot } from '../discord/discord-harness.js';
import { agentOf } from './subagent-helpers.js';

/**
 * "researcher: calculator" where a person on Slack or Discord can read it: the real adapters
 * (Bolt, discord.js) against their fake servers. The working reaction and "typing…" say nothing
 * about sub-agents, so a delegated turn gets a status message, deleted when the turn ends.
 * (The terminal prints the same notes as lines: test/subagents/restart.test.ts.)
 */

let slack: SlackHarness | undefined;
let discord: Bot | undefined;
afterEach(async () => {
  await slack?.close();
  await discord?.close();
  slack = discord = undefined;
});

const tools = () => [calculator, delegateTool(resolveProfiles({ coder: false, writer: false }))!];

/** The main agent delegates once; the researcher uses the calculator, then answers. */
function script(ai: FakeOpenAI) {
  const main: FakeReply[] = [{ toolCalls: [{ id: 'del', name: 'delegate', arguments: { agent: 'researcher', task: 'What is 6 * 7?' } }] }, { text: 'It is 42.' }];
  const sub: FakeReply[] = [{ toolCalls: [{ id: 'calc', name: 'calculator', arguments: { expression: '6 * 7' } }] }, { text: '42' }];
  ai.setHandler((req) => (agentOf(req) ? sub.shift() : main.shift()) ?? { text: 'script ran out' });
}

describe('sub-agent progress on chat platforms', { timeout: 60_000 }, () => {
  it('Slack: a status message in the thread says which sub-agent runs which tool, and is deleted when the turn ends', async () => {
    slack = await startSlackHarness({ extraTools: tools() });
    script(slack.ai);
    const ts = await slack.mention('C1', 'U1', 'what is 6*7? ask your researcher', { pair: false });
    await slack.slack.waitFor('the answer', () => slack!.slack.posts().some((p) => p.text === 'It is 42.'));
    await slack.core.gateway.idle();
    const posts = slack.slack.posts({ channel: 'C1', thread_ts: ts });
    expect(posts.map((p) => p.text)).toEqual([':hourglass_flowing_sand: researcher: calculator', 'It is 42.']);
    expect(posts[0]!.args).toMatchObject({ unfurl_links: false, unfurl_media: false });
    await slack.slack.waitFor('the status message deleted', () => slack!.slack.callsTo('chat.delete').length === 1);
    expect(slack.slack.callsTo('chat.delete')[0]!.args).toMatchObject({ channel: 'C1', ts: posts[0]!.ts });
    // A turn without sub-agents posts no status message.
    slack.ai.setHandler((req) => (req.messages.some((m) => m.role === 'tool') ? { text: 'two' } : { toolCalls: [{ name: 'calculator', arguments: { expression: '1 + 1' } }] }));
    const plain = await slack.mention('C1', 'U1', 'what is 1+1?', { pair: false });
    await slack.slack.waitFor('the second answer', () => slack!.slack.posts({ thread_ts: plain }).length > 0);
    await slack.core.gateway.idle();
    expect(slack.slack.posts({ thread_ts: plain }).map((p) => p.text)).toEqual(['two']);
    expect(slack.slack.callsTo('chat.delete')).toHaveLength(1);
  });

  it('Discord: a status message (no reply, no pings) says which sub-agent runs which tool, and is deleted when the turn ends', async () => {
    discord = await startBot({ tools: tools() });
    script(discord.openai);
    const fake = discord.discord;
    const body = (c: { body: unknown }) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;
    const path = `/channels/${fake.channelId}/messages`;
    fake.sendGuildMessage({ author: DEFAULT_USER, content: 'what is 6*7? ask your researcher', mentionBot: true });
    const status = await fake.waitForCall((c) => c.method === 'POST' && c.path === path && body(c).content === '⏳ researcher: calculator');
    expect(body(status).allowed_mentions).toMatchObject({ parse: [], users: [], roles: [], replied_user: false });
    expect(body(status).message_reference).toBeUndefined();
    await fake.waitForCall((c) => c.method === 'POST' && c.path === path && body(c).content === 'It is 42.');
    const id = (status.response as APIMessage).id;
    await fake.waitForCall((c) => c.method === 'DELETE' && c.path === `${path}/${id}`, 15_000, 'the status message deleted');
  });
});
