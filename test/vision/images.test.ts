import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sniffImage } from '../../src/runtime/vision/image-type.js';
import { promptImages, IMAGE_TOKENS } from '../../src/runtime/vision/prompt-images.js';
import { toSdkMessages } from '../../src/runtime/provider/sdk-messages.js';
import { fitContext } from '../../src/runtime/context/context-window.js';
import { createTokenCounter } from '../../src/runtime/context/token-counter.js';
import { outsideSourcesIn } from '../../src/capabilities/toolkit/outside-gate.js';
import { createVisionSupport } from '../../src/runtime/vision/vision-support.js';
import { probeVision, type VisionAnswer } from '../../src/runtime/vision/vision-probe.js';
import { toJsonModeMessages } from '../../src/runtime/provider/json-mode.js';
import { loadConfig } from '../../src/settings/load-config.js';
import type { ChatMessage, ImageRef } from '../../src/basics/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { GIF_HEAD, JPEG_HEAD, makePng, webpHead } from './image-fixtures.js';

const log = pino({ level: 'silent' });
const ref = (n: number, bytes = 1000): ImageRef => ({ path: `attachments/p${n}.png`, mime: 'image/png', bytes, sha256: `h${n}`, width: 10, height: 20 });

describe('image types by their bytes', () => {
  it('knows PNG, JPEG, GIF and WebP with their pixel size, and nothing else', () => {
    expect(sniffImage(makePng(3, 2))).toEqual({ mime: 'image/png', label: 'PNG', width: 3, height: 2 });
    expect(sniffImage(JPEG_HEAD)).toEqual({ mime: 'image/jpeg', label: 'JPEG', width: 640, height: 480 });
    expect(sniffImage(GIF_HEAD)).toEqual({ mime: 'image/gif', label: 'GIF', width: 32, height: 16 });
    expect(sniffImage(webpHead(800, 600))).toEqual({ mime: 'image/webp', label: 'WebP', width: 800, height: 600 });
    expect(sniffImage(Buffer.from('not an image, whatever the name says'))).toBeUndefined();
    expect(sniffImage(Buffer.from('%PDF-1.4'))).toBeUndefined();
    expect(sniffImage(Buffer.from([0x89, 0x50]))).toBeUndefined();
  });
});

describe('which images a request carries', () => {
  const history = (): ChatMessage[] => [
    { role: 'user', content: 'first', images: [ref(1)] },
    { role: 'assistant', content: 'seen' },
    { role: 'user', content: 'second', images: [ref(2), ref(3)] },
  ];

  it('a model without vision is told each image exists and that it cannot see it', () => {
    const out = promptImages(history(), false);
    expect(out.some((m) => m.role === 'user' && m.images)).toBe(false);
    expect(out[2]!.content).toContain('Images attachments/p2.png (PNG, 10×20, 1000 B), attachments/p3.png (PNG, 10×20, 1000 B): you cannot see images with this model');
  });

  it('keeps the newest images within the count and size caps and names the ones left out', () => {
    const out = promptImages(history(), true, { maxImages: 2, maxBytes: 10_000 });
    expect(out[0]).toMatchObject({ content: expect.stringContaining('Image attachments/p1.png (PNG, 10×20, 1000 B) shown earlier is left out now to save space; view_image shows one again.') });
    expect((out[0] as { images?: unknown }).images).toBeUndefined();
    expect((out[2] as { images?: ImageRef[] }).images?.map((r) => r.path)).toEqual(['attachments/p2.png', 'attachments/p3.png']);
    const bySize = promptImages(history(), true, { maxImages: 10, maxBytes: 1500 });
    expect((bySize[2] as { images?: ImageRef[] }).images?.map((r) => r.path)).toEqual(['attachments/p3.png']);
  });

  it('counts an image as a fixed cost, and under pressure replaces the images of earlier turns first', () => {
    const counter = createTokenCounter('llama-3.2-vision');
    const msg: ChatMessage = { role: 'user', content: 'hi', images: [ref(1)] };
    expect(counter.countMessage(msg) - counter.countMessage({ role: 'user', content: 'hi' })).toBe(IMAGE_TOKENS);
    const h: ChatMessage[] = [...history(), { role: 'assistant', content: 'ok' }, { role: 'user', content: 'third', images: [ref(4)] }];
    const fit = fitContext({ system: 'sys', history: h, budgetTokens: 3 * IMAGE_TOKENS + 200, toolsTokens: 0, counter });
    expect(fit.fits).toBe(true);
    const kept = fit.messages.flatMap((m) => (m.role === 'user' ? (m.images ?? []).map((r) => r.path) : []));
    expect(kept).toContain('attachments/p4.png');
    expect(kept).not.toContain('attachments/p1.png');
    expect(JSON.stringify(fit.messages)).toContain('attachments/p1.png (PNG, 10×20, 1000 B) shown earlier is left out');
  });

  it('an image the model was shown counts as outside content for the approval gate', () => {
    expect(outsideSourcesIn([{ role: 'user', content: 'look', images: [ref(1)] }])).toEqual(['image attachments/p1.png']);
    expect(outsideSourcesIn(promptImages([{ role: 'user', content: 'look', images: [ref(1)] }], false))).toEqual([]);
  });
});

describe('images on the wire (chat completions)', () => {
  const data = new Map([['h1', 'data:image/png;base64,AAAA'], ['h2', 'data:image/png;base64,BBBB']]);

  it('a user message becomes text and image_url parts', () => {
    const [m] = toSdkMessages([{ role: 'user', content: 'what is this?', images: [ref(1)] }], data);
    expect(m).toEqual({ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] });
  });

  it("a tool's image follows all the tool results as one user message (tool messages carry text only)", () => {
    const wire = toSdkMessages(
      [
        { role: 'assistant', content: null, toolCalls: [{ id: 'a', name: 'view_image', arguments: '{"path":"p2.png"}' }, { id: 'b', name: 'calculator', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'a', name: 'view_image', content: 'p2: the image follows', images: [ref(2)] },
        { role: 'tool', toolCallId: 'b', name: 'calculator', content: '4' },
      ],
      data,
    );
    expect(wire.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool', 'user']);
    expect(wire[3]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: '[view_image result: attachments/p2.png (PNG, 10×20, 1000 B). The image is attached to this message.]' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,BBBB' } }],
    });
  });

  it('JSON mode carries a tool image on the observation turn', () => {
    const out = toJsonModeMessages([{ role: 'tool', toolCallId: 'a', name: 'view_image', content: 'x', images: [ref(2)] }], []);
    expect(out[1]).toMatchObject({ role: 'user', images: [ref(2)] });
  });
});

describe('asking the server whether the model takes images', () => {
  let ai: FakeOpenAI;
  let dir: string;
  beforeEach(async () => {
    ai = await startFakeOpenAI();
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-vision-'));
  });
  afterEach(async () => {
    await ai.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('yes from a vision model, no from a text model (a 400 naming the content type), unknown when nobody answers', async () => {
    expect(await probeVision({ baseURL: ai.url, apiKey: 'k', model: 'm' })).toBe('yes');
    ai.setVision(false);
    expect(await probeVision({ baseURL: ai.url, apiKey: 'k', model: 'm' })).toBe('no');
    expect(ai.visionProbes).toHaveLength(2);
    expect(ai.requests).toEqual([]);
    expect(await probeVision({ baseURL: 'http://127.0.0.1:9/v1', apiKey: 'k', model: 'm', timeoutMs: 2_000 })).toBe('unknown');
  });

  it('auto asks once per model and remembers the answer on disk; on and off never ask', async () => {
    const file = path.join(dir, 'vision.json');
    let asked = 0;
    const probe = async (): Promise<VisionAnswer> => {
      asked += 1;
      return 'no';
    };
    const v = createVisionSupport({ mode: 'auto', maxImageBytes: 5, model: 'm', baseURL: ai.url, probe, file, log });
    expect(await v.check()).toBe(false);
    expect(await v.check()).toBe(false);
    expect(asked).toBe(1);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ [`${ai.url}|m`]: { images: false, checkedAt: expect.any(String) } });
    // A restart reads the answer instead of asking again.
    const again = createVisionSupport({ mode: 'auto', maxImageBytes: 5, model: 'm', baseURL: ai.url, probe, file, log });
    expect(await again.check()).toBe(false);
    expect(asked).toBe(1);
    for (const mode of ['on', 'off'] as const) {
      const fixed = createVisionSupport({ mode, maxImageBytes: 5, model: 'x', probe, file, log });
      expect([fixed.canSee(), await fixed.check()]).toEqual([mode === 'on', mode === 'on']);
    }
    expect(asked).toBe(1);
  });

  it('an inconclusive probe is not remembered and is tried again later; a refused request teaches "no"', async () => {
    const file = path.join(dir, 'vision.json');
    let clock = 0;
    const answers: VisionAnswer[] = ['unknown', 'yes'];
    const v = createVisionSupport({ mode: 'auto', maxImageBytes: 5, model: 'm', probe: async () => answers.shift()!, file, log, now: () => clock });
    expect(await v.check()).toBe(false);
    expect(await v.check()).toBe(false); // within the minute: not asked again
    clock += 61_000;
    expect(await v.check()).toBe(true);
    expect(v.canSee()).toBe(true);
    await v.refused('Invalid content type. image_url is only supported by certain models.');
    expect(v.canSee()).toBe(false);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ 'openai|m': { images: false, checkedAt: expect.any(String) } });
  });
});

describe('settings', () => {
  it('HERMES_VISION and HERMES_MAX_IMAGE_MB: defaults, and one clear line for a bad value', () => {
    const ok = loadConfig({}, os.tmpdir());
    expect(ok.ok && ok.config.vision).toEqual({ mode: 'auto', maxImageBytes: 5 * 1024 * 1024 });
    const bad = loadConfig({ HERMES_VISION: 'maybe', HERMES_MAX_IMAGE_MB: '50' }, os.tmpdir());
    expect(bad.ok ? [] : bad.errors).toEqual([
      'HERMES_VISION="maybe" is not valid: use "auto" (ask the model server once whether the model takes images), "on" or "off".',
      'HERMES_MAX_IMAGE_MB="50" is not valid: the largest image shown to the model, in MB, a whole number from 1 to 20 (default 5).',
    ]);
  });
});
