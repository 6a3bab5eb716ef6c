import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteDatabase, type OpenedDatabase } from '../../src/state/store/database.js';
import { createAuditLog, type AuditLog } from '../../src/state/audit/audit-log.js';
import { serveDashboard, TOKEN, type Served } from './dashboard-helper.js';

/**
 * /dashboard/audit in a real headless Chromium (Debian's) over the real dashboard handler and a
 * real SQLite audit table: no way in without the token, the filters narrow the list (kind, actor,
 * channel, dates; values with quotes and wildcards match only themselves), pages link on, and the
 * CSV download holds exactly the filtered rows with formula cells defused.
 */

const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available) {
  if (process.env.CI === 'true') throw new Error(`CI=true but ${CHROMIUM} is missing, so the audit browser test cannot run: install the Debian "chromium" package (.ci/run does).`);
  process.stderr.write(`audit browser test skipped: ${CHROMIUM} is not installed (apt-get install chromium)\n`);
}

const DAY = 86_400_000;
const D1 = Date.UTC(2026, 10, 1, 9, 0);
let now = D1;
const clock = { now: () => now, setTimer: () => () => undefined };

let dir: string;
let database: OpenedDatabase;
let audit: AuditLog;
let served: Served;
let browser: Browser;

const alice = { platform: 'slack' as const, userId: 'U0ALICE' };
const mallory = { platform: 'slack' as const, userId: "U0M'AL%_" };
const general = { platform: 'slack' as const, channelId: 'C0GENERAL' };
const ops = { platform: 'discord' as const, channelId: '200000000000000001' };

describe.skipIf(!available)('audit page in a real browser', () => {
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-audit-browser-'));
    database = await openSqliteDatabase(path.join(dir, 'hermes.sqlite'));
    audit = createAuditLog({ database, clock, log: pino({ level: 'silent' }) });
    // Day 1: 60 refusals of mallory in #ops (more than one page), an approval by alice.
    for (let i = 0; i < 60; i++) {
      now = D1 + i * 1_000;
      await audit.record({ kind: 'limit_refused', outcome: 'rate_limit', actor: mallory, conversation: ops, detail: { n: i } });
    }
    now = D1 + 3_600_000;
    await audit.record({ kind: 'approval', outcome: 'approved', actor: alice, conversation: general, tool: 'run_code', args: { code: '1+1' } });
    // Day 2: a command whose argument is a spreadsheet formula, and a stop.
    now = D1 + DAY;
    await audit.record({ kind: 'admin_command', outcome: 'done', actor: alice, conversation: general, detail: { command: 'forget', arg: '=HYPERLINK("http://evil.example","x"), "quoted"' } });
    now = D1 + DAY + 1_000;
    await audit.record({ kind: 'stop', outcome: '-stopped', actor: alice, conversation: ops, detail: { via: 'button' } });
    // Day 3: the bot's own start.
    now = D1 + 2 * DAY;
    await audit.record({ kind: 'config', outcome: '@start', detail: { configHash: 'abc123' } });
    now = D1 + 3 * DAY;
    served = await serveDashboard({ tracesDir: path.join(dir, 'traces'), evalsDir: path.join(dir, 'evals'), audit, now: () => now });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-background-networking'], timeout: 30_000 });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await served?.close();
    await database?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('without the token: the page and the CSV send the browser to sign-in and show no row', async () => {
    const ctx = await browser.newContext({ acceptDownloads: true });
    const page = await ctx.newPage();
    await page.goto(`${served.base}/dashboard/audit?kind=approval`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    expect(await page.content()).not.toContain('run_code');
    const csv = await page.request.get(`${served.base}/dashboard/audit.csv`, { maxRedirects: 0 });
    expect(csv.status()).toBe(303);
    expect(csv.headers()['location']).toMatch(/^\/dashboard\/login/);
    expect(await csv.text()).toBe('');
    const wrong = await page.request.get(`${served.base}/dashboard/audit.csv`, { headers: { authorization: 'Bearer not-the-token' }, maxRedirects: 0 });
    expect(wrong.status()).toBe(401);
    expect(await wrong.text()).not.toContain('U0ALICE');
    await ctx.close();
  });

  it('signs in, filters by kind, actor, channel and dates, pages, and downloads exactly the filtered rows', async () => {
    const ctx = await browser.newContext({ acceptDownloads: true });
    const page = await ctx.newPage();
    await page.goto(`${served.base}/dashboard/audit`);
    await page.fill('#token', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(`${served.base}/dashboard/audit`);
    page.setDefaultTimeout(10_000);
    const count = () => page.locator('#audit-count').innerText();
    const rows = page.locator('#audit tbody tr');
    /** Fills the filter form, submits it, and waits for the page of exactly those filters. */
    const filter = async (f: { kind?: string; actor?: string; channel?: string; from?: string; to?: string }) => {
      await page.selectOption('select[name=kind]', f.kind ?? '');
      for (const name of ['actor', 'channel', 'from', 'to'] as const) await page.fill(`input[name=${name}]`, f[name] ?? '');
      await Promise.all([
        page.waitForURL((u) => u.pathname === '/dashboard/audit' && ['kind', 'actor', 'channel', 'from', 'to'].every((k) => (u.searchParams.get(k) ?? '') === (f[k as keyof typeof f] ?? ''))),
        page.click('#audit-filters button[type=submit]'),
      ]);
      await page.waitForLoadState('load');
    };
    expect(await count()).toBe('64 events');
    expect(await rows.count()).toBe(50);
    expect(await rows.first().innerText()).toContain('@start');

    await Promise.all([page.waitForURL(/page=2$/), page.click('a[rel=next]')]);
    expect(await rows.count()).toBe(14);
    expect(await page.locator('.pager').innerText()).toContain('page 2 of 2');

    await filter({ kind: 'approval' });
    expect(await count()).toBe('1 event');
    expect(await rows.first().innerText()).toContain('run_code');

    // An actor id with a quote, % and _ is matched as written, not as a pattern.
    await filter({ actor: "slack:U0M'AL%_" });
    expect(await count()).toBe('60 events');
    await filter({ actor: 'slack:U0M%' });
    expect(await count()).toBe('0 events');

    await filter({ actor: 'slack:U0ALICE', channel: 'discord:200000000000000001' });
    expect(await count()).toBe('1 event');
    expect(await rows.first().innerText()).toContain('-stopped');

    // Day 2 only, anyone, anywhere: the command and the stop.
    await filter({ from: '2026-11-02', to: '2026-11-02' });
    expect(await count()).toBe('2 events');

    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#audit-csv')]);
    expect(download.suggestedFilename()).toMatch(/^hermes-audit-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = await readFile((await download.path())!, 'utf8');
    const lines = csv.split('\r\n');
    expect(lines[0]).toBe('time_utc,kind,actor,channel,tool,args_hash,outcome,detail,id');
    expect(lines).toHaveLength(4); // header, two rows, the empty string after the last CRLF
    expect(lines[1]).toMatch(/^2026-11-02T09:00:01\.000Z,stop,slack:U0ALICE,discord:200000000000000001,,,'-stopped,/);
    // The argument holds a formula, commas and quotes: one quoted cell, quotes doubled. The cell starts
    // with `{` (it is JSON), so it is no formula; the outcome cell `-stopped` above got its `'`.
    expect(lines[2]).toContain('admin_command');
    expect(lines[2]).toContain('"{""command"":""forget"",""arg"":""=HYPERLINK(\\""http://evil.example\\"",\\""x\\""), \\""quoted\\""""}"');
    await ctx.close();
  });

  it('a bad filter value is named on the page and ignored, never passed on', async () => {
    const cookie = await served.signIn();
    const res = await served.get(`/dashboard/audit?kind=${encodeURIComponent("approval' OR 1=1 --")}&from=2026-02-31&page=-3`, { cookie });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('Unknown kind ignored');
    expect(text).toContain('The &quot;from&quot; date is not a date');
    expect(text).toContain('64 events');
    expect(text).toContain('page 1 of 2');
  });
});
