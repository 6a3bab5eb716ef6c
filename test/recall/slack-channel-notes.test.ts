import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNEL_NOTES_HEADING } from '../../src/agent/system-prompt.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { startSlackHarness, type SlackHarness } from '../slack/slack-harness.js';

/**
 * Channel notes on Slack end to end: the real Bolt app and core against the fake Slack and fake
 * OpenAI. `/hermes notes set` by an admin and by the channel policy's approver, refused privately
 * for anyone else; `/hermes notes` shows them; the next turn in that channel (and its threads)
 * carries them in the system prompt the model receives, another channel does not.
 */

let h: SlackHarness;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-notes-slack-'));
  const file = path.join(dir, 'hermes.config.yaml');
  await writeFile(file, 'channels:\n  slack:CENG:\n    approvers: [slack:ULEAD]\n  slack:COPS:\n    approvers: [slack:ULEAD]\n');
  h = await startSlackHarness({ env: { HERMES_CONFIG: file, HERMES_ADMINS: 'slack:UADMIN' } });
});
afterAll(async () => {
  await h?.close();
  await rm(dir, { recursive: true, force: true });
});

const systemText = (req: ChatCompletionRequestBody) => String(req.messages.find((m) => m.role === 'system')?.content ?? '');
const userTexts = (req: ChatCompletionRequestBody) => req.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));

async function command(userId: string, channelId: string, text: string): Promise<{ response_type: string; text: string }> {
  const { status, responseId } = await h.slack.sendCommand(h.target, { text, userId, channelId });
  expect(status).toBe(200);
  await h.slack.waitFor(`the answer to /hermes ${text}`, () => h.slack.responses.some((r) => r.id === responseId));
  return h.slack.responses.find((r) => r.id === responseId)!.body as { response_type: string; text: string };
}

async function turn(channel: string, user: string, text: string, answer: string, threadTs?: string): Promise<ChatCompletionRequestBody> {
  const before = h.ai.requests.length;
  h.ai.enqueue({ text: answer });
  await h.mention(channel, user, text, threadTs ? { threadTs } : {});
  await h.slack.waitFor(`the answer "${answer}"`, () => h.slack.posts({ channel }).some((p) => p.text === answer));
  expect(h.ai.requests.length).toBe(before + 1);
  return h.ai.requests.at(-1)!;
}

describe('channel notes on slack', () => {
  it('only admins and the channel approvers set them, privately refused for others; shown with /hermes notes', async () => {
    const none = await command('UDEV', 'CENG', 'notes');
    expect(none.response_type).toBe('ephemeral');
    expect(none.text).toMatch(/This channel has no notes/);

    const refused = await command('UDEV', 'CENG', 'notes set Deploys go through #ops.');
    expect(refused.response_type).toBe('ephemeral');
    expect(refused.text).toMatch(/Only admins and this channel's approvers can change its notes/);
    expect((await command('UDEV', 'CENG', 'notes')).text).toMatch(/This channel has no notes/);
    // The approver of CENG is nobody special elsewhere.
    expect((await command('ULEAD', 'COTHER', 'notes set Not mine to set.')).text).toMatch(/Only admins and this channel's approvers/);

    const byApprover = await command('ULEAD', 'CENG', 'notes set Deploys go through #ops. Our fiscal year starts in April.');
    expect(byApprover.response_type).toBe('ephemeral');
    expect(byApprover.text).toMatch(/Saved the notes of this channel/);
    const shown = await command('UDEV', 'CENG', 'notes');
    expect(shown.response_type).toBe('ephemeral');
    expect(shown.text).toMatch(/Notes of this channel[\s\S]*Deploys go through #ops\. Our fiscal year starts in April\./);

    // Nothing was posted in the channel for any of this: every answer was private.
    expect(h.slack.posts({ channel: 'CENG' })).toEqual([]);
  });

  it('reach the model on the next turn in that channel and its threads, as channel context; not in another channel', async () => {
    expect((await command('ULEAD', 'COPS', 'notes set Deploys go through #ops. Our fiscal year starts in April.')).text).toMatch(/Saved/);
    const inChannel = await turn('COPS', 'UDEV', 'when does our year start?', 'In April.');
    expect(systemText(inChannel)).toContain(`${CHANNEL_NOTES_HEADING}\nDeploys go through #ops. Our fiscal year starts in April.`);
    expect(userTexts(inChannel).some((t) => t.includes('fiscal year'))).toBe(false);

    const root = h.slack.posts({ channel: 'COPS' }).find((p) => p.text === 'In April.')!.args.thread_ts as string;
    const inThread = await turn('COPS', 'UOTHER', 'and deploys?', 'Through #ops.', root);
    expect(systemText(inThread)).toContain('Deploys go through #ops.');

    const elsewhere = await turn('CGEN', 'UDEV', 'hello', 'Hi.');
    expect(systemText(elsewhere)).not.toContain(CHANNEL_NOTES_HEADING);
    expect(systemText(elsewhere)).not.toContain('fiscal year');
  });

  it('an admin replaces and clears them; the next turn follows', async () => {
    expect((await command('UADMIN', 'CREL', 'notes set Releases on Mondays.')).text).toMatch(/Saved/);
    expect((await command('UADMIN', 'CREL', 'notes set Releases on Tuesdays only.')).text).toMatch(/Saved/);
    const replaced = systemText(await turn('CREL', 'UDEV', 'when do we release?', 'Tuesdays.'));
    expect(replaced).toContain(`${CHANNEL_NOTES_HEADING}\nReleases on Tuesdays only.`);
    expect(replaced).not.toContain('Mondays');
    expect((await command('UDEV', 'CREL', 'notes clear')).text).toMatch(/Only admins/);
    expect((await command('UADMIN', 'CREL', 'notes clear')).text).toBe('Cleared the notes of this channel.');
    expect(systemText(await turn('CREL', 'UDEV', 'again?', 'Sure.'))).not.toContain(CHANNEL_NOTES_HEADING);
  });
});
