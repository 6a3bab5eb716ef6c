import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RESTPostAPIChannelMessageJSONBody } from 'discord-api-types/v10';
import { fileTools } from '../../tools/files.js';
import { viewImageTool } from '../../tools/view-image.js';
import { DEFAULT_USER, startFakeDiscord, type RestCall } from '../fakes/discord/fake-discord.js';
import type { ChatCompletionRequestBody } from '../fakes/openai/fake-openai.js';
import { startBot, type Bot } from '../discord/discord-harness.js';
import { makePdf } from '../documents/fixtures.js';
import { makePng } from './image-fixtures.js';

/**
 * Images and documents on Discord through the real discord.js client against the fake Discord
 * (its CDN serves the attachment) and the real openai SDK against the fake model: an attached
 * image reaches the model as an image_url part; an attached PDF is read as text by read_file.
 */

let bot: Bot;
beforeAll(async () => {
  bot = await startBot({ discord: await startFakeDiscord(), tools: [...fileTools, viewImageTool] });
});
afterAll(async () => {
  await bot?.close();
  await bot?.discord.close();
});

type Part = { type: string; text?: string; image_url?: { url: string } };
const body = (c: RestCall) => (c.body ?? {}) as RESTPostAPIChannelMessageJSONBody;
const imageUrls = (req: ChatCompletionRequestBody): string[] =>
  req.messages.flatMap((m) => (Array.isArray(m.content) ? (m.content as Part[]).filter((p) => p.type === 'image_url').map((p) => p.image_url!.url) : []));
const answered = (id: string, text: string) =>
  bot.discord.waitForCall((c) => c.method === 'POST' && body(c).content === text && body(c).message_reference?.message_id === id, 20_000, `the answer "${text}"`);

describe('images and documents on discord', () => {
  it('an attached PNG reaches the model as an image_url part of the user message, with its text', async () => {
    const { discord, openai } = bot;
    const png = makePng(7, 5);
    const before = openai.requests.length;
    openai.enqueue({ text: 'A grey box.' });
    const id = discord.sendGuildMessage({ author: DEFAULT_USER, content: 'what is in the screenshot?', mentionBot: true, attachments: [discord.cdnFile('screen.png', png, 'image/png')] });
    await answered(id, 'A grey box.');
    const req = openai.requests[before]!;
    const user = req.messages.filter((m) => m.role === 'user').at(-1)!;
    expect(Array.isArray(user.content)).toBe(true);
    const parts = user.content as Part[];
    expect(parts[0]).toMatchObject({ type: 'text' });
    expect(parts[0]!.text).toContain('what is in the screenshot?');
    expect(parts[0]!.text).toContain('attachments/screen.png');
    expect(imageUrls(req)).toEqual([`data:image/png;base64,${png.toString('base64')}`]);
    expect(openai.visionProbes).toHaveLength(1);
    expect((req.tools ?? []).map((t) => (t.type === 'function' ? t.function.name : ''))).toContain('view_image');
  });

  it('an attached PDF is read by read_file as text, pages marked, as outside data', async () => {
    const { discord, openai } = bot;
    const before = openai.requests.length;
    openai.enqueue({ toolCalls: [{ name: 'read_file', arguments: { path: 'attachments/terms.pdf' } }] }, { text: 'Two pages.' });
    const id = discord.sendGuildMessage({
      author: DEFAULT_USER,
      content: 'summarise the terms',
      mentionBot: true,
      channelId: '300000000000000004',
      attachments: [discord.cdnFile('terms.pdf', makePdf(['Notice: 30 days', 'Law: Irish']), 'application/pdf')],
    });
    await answered(id, 'Two pages.');
    const tool = String(openai.requests[before + 1]!.messages.find((m) => m.role === 'tool')?.content);
    expect(tool).toMatch(/<<<OUTSIDE_DATA id=\w+ source="attached file attachments\/terms.pdf">>>/);
    expect(tool).toContain('--- page 1 of 2 ---\nNotice: 30 days');
    expect(tool).toContain('--- page 2 of 2 ---\nLaw: Irish');
  });
});
