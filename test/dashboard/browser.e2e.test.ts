import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startChat, type ChatProcess } from '../helpers/chat-process.js';
import { TOKEN } from './dashboard-helper.js';

/**
 * The dashboard in a real headless Chromium (Debian's, never a downloaded browser) against the
 * real bot process: the terminal chat answers a question with a calculator call through the fake
 * model, then the browser signs in, finds that turn, opens it, sees the tool call and replays it
 * against another model. Screenshots go to .tmp/dashboard-screenshots (gitignored). In CI a
 * missing Chromium fails; locally it skips.
 */

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = path.resolve(import.meta.dirname, '../../.tmp/dashboard-screenshots');
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.CI === 'true') throw new Error(`CI=true but ${CHROMIUM} is missing, so the dashboard browser test cannot run: install the Debian "chromium" package (.ci/run does).`);
  process.stderr.write(`dashboard browser test skipped: ${CHROMIUM} is not installed (apt-get install chromium)\n`);
}

let fake: FakeOpenAI;
let chat: ChatProcess;
let browser: Browser;
let dataDir: string;
let base: string;

async function dashboardPort(c: ChatProcess, timeoutMs = 45_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const m = /"port":(\d+),"msg":"dashboard: serving \/dashboard"/.exec(c.stderr());
    if (m) return Number(m[1]);
    if (Date.now() - started > timeoutMs) throw new Error(`the bot never said it serves the dashboard; stderr:\n${c.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!available)('dashboard in a real browser', () => {
  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.enqueue({ toolCalls: [{ id: 'call_calc', name: 'calculator', arguments: { expression: '6 * 7' } }] }, { text: 'Six times seven is 42.' });
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-dash-e2e-'));
    chat = startChat({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test-key', HERMES_MODEL_RETRIES: '0', HERMES_DATA_DIR: dataDir, HERMES_DASHBOARD_TOKEN: TOKEN, PORT: '0', LOG_LEVEL: 'info' });
    base = `http://127.0.0.1:${await dashboardPort(chat)}`;
    chat.send('what is 6 times 7? <img src=x onerror=alert(1)>');
    await chat.waitFor(/Six times seven is 42\./);
    await mkdir(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-background-networking'], timeout: 30_000 });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await chat?.kill9();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('signs in, opens the turn and shows the tool call; charts draw offline; sign-out ends the session', async () => {
    // Once ready the bot indexed the traces in the background (none yet in a fresh data dir).
    expect(chat.stderr()).toMatch(/"turns":0,"ms":\d+,"msg":"dashboard: traces indexed"/);
    const page = await browser.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    // Nothing may be fetched from anywhere but the bot (no CDN).
    const foreign: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(base)) foreign.push(r.url());
    });

    await page.goto(`${base}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    await page.screenshot({ path: path.join(SHOTS, '1-sign-in.png') });
    await page.fill('#token', 'not-the-token-at-all');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('.notice.error').textContent()).toContain('That token is not right');
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}/dashboard/turns`);

    const row = page.locator('#turns tbody tr').first();
    await expect.poll(() => row.textContent()).toContain('what is 6 times 7?');
    expect(await row.textContent()).toContain('calculator');
    await page.screenshot({ path: path.join(SHOTS, '2-turns.png'), fullPage: true });

    await row.locator('a').nth(1).click();
    await page.waitForURL(/\/dashboard\/turns\/[^/]+$/);
    const tool = page.locator('[data-tool="calculator"]');
    await tool.waitFor({ state: 'visible' });
    expect(await tool.textContent()).toContain('6 * 7');
    expect(await tool.textContent()).toContain('42');
    expect(await tool.locator('.ok').textContent()).toBe('ok');
    // The user's hostile HTML is shown as text, not run.
    expect(await page.locator('#timeline').textContent()).toContain('<img src=x onerror=alert(1)>');
    expect(await page.locator('#timeline img').count()).toBe(0);
    await page.locator('details summary', { hasText: 'Prompt as sent' }).first().click();
    await page.screenshot({ path: path.join(SHOTS, '3-turn.png'), fullPage: true });

    // The replay button: the recorded requests go to another model (the same answers come back).
    fake.enqueue({ toolCalls: [{ id: 'call_r', name: 'calculator', arguments: { expression: '6 * 7' } }] }, { text: 'It is 42.' });
    await page.fill('input[name=model]', 'other-model');
    await page.click('button#replay');
    await page.waitForURL(/\/dashboard\/replays\/[\w-]+$/, { timeout: 30_000 });
    const replay = page.locator('table#replay');
    expect(await replay.locator('th').nth(2).textContent()).toBe('Replay (other-model)');
    expect(await replay.locator('tbody tr').count()).toBe(2);
    expect(await replay.locator('tbody tr').first().textContent()).toContain('calculator');
    expect(fake.requests.at(-1)?.model).toBe('other-model');
    await page.screenshot({ path: path.join(SHOTS, '4-replay.png'), fullPage: true });

    await page.goto(`${base}/dashboard/stats`);
    await page.locator('.uplot canvas').first().waitFor({ state: 'visible' });
    expect(await page.locator('.uplot').count()).toBe(2);
    expect(await page.locator('#tool-stats').textContent()).toContain('calculator');
    await page.screenshot({ path: path.join(SHOTS, '5-stats.png'), fullPage: true });

    await page.click('header button[type=submit]');
    await page.waitForURL(/\/dashboard\/login\?signed-out/);
    await page.goto(`${base}/dashboard/turns`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');

    expect(dialogs).toEqual([]);
    expect(foreign).toEqual([]);
    await page.close();
  }, 90_000);
});
