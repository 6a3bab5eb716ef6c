import { mkdtemp, rm } from 'node:fs/promises';
import os, { networkInterfaces } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBotHttp, listenHost } from '../../src/app/bot-http.js';
import { loadConfig } from '../../src/settings/load-config.js';
import { formToken, serveDashboard, TOKEN, type Served } from './dashboard-helper.js';

let dir: string;
let d: Served;
let clock = 1_800_000_000_000;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-dash-auth-'));
  clock = 1_800_000_000_000;
  d = await serveDashboard({ tracesDir: path.join(dir, 'traces'), evalsDir: path.join(dir, 'evals'), now: () => clock, signIn: { maxFailures: 3, windowMs: 10 * 60_000 } });
});
afterEach(async () => {
  await d.close();
  await rm(dir, { recursive: true, force: true });
});

describe('dashboard sign-in', () => {
  it('shows only the sign-in page without a cookie', async () => {
    for (const p of ['/dashboard', '/dashboard/turns', '/dashboard/turns/abc', '/dashboard/stats', '/dashboard/evals']) {
      const res = await d.get(p);
      expect(res.status, p).toBe(303);
      expect(res.headers.get('location'), p).toMatch(/^\/dashboard\/login/);
    }
    const login = await d.get('/dashboard/login');
    expect(login.status).toBe(200);
    const page = await login.text();
    expect(page).toContain('name="token"');
    expect(page).not.toContain('Turns</a>');
    expect((await d.post('/dashboard/logout', {})).status).toBe(401);
  });

  it('signs in with the token: an HttpOnly SameSite=Strict session cookie that is not the token', async () => {
    const res = await d.post('/dashboard/login', { token: TOKEN, next: '/dashboard/stats' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dashboard/stats');
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).not.toContain(TOKEN);
    const cookie = setCookie.split(';')[0]!;
    const turns = await d.get('/dashboard/turns', { cookie });
    expect(turns.status).toBe(200);
    expect(await turns.text()).toContain('<h1>Turns</h1>');
  });

  it('never redirects to another site after sign-in', async () => {
    for (const next of ['https://evil.example/', '//evil.example/x', '/dashboard/../x//y', 'javascript:alert(1)']) {
      const res = await d.post('/dashboard/login', { token: TOKEN, next });
      expect(res.headers.get('location'), next).toBe('/dashboard/turns');
    }
  });

  it('refuses a wrong token, then rate-limits the address with a clear message, until the window ends', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await d.post('/dashboard/login', { token: 'wrong-token-wrong-token' });
      expect(res.status).toBe(401);
      expect(await res.text()).toContain('That token is not right');
    }
    const third = await d.post('/dashboard/login', { token: 'still-wrong' });
    expect(third.status).toBe(429);
    expect(await third.text()).toContain('Too many failed sign-ins from your address. Try again in 10 minutes.');
    // Even the right token is refused while the address is blocked; bearer attempts too.
    const right = await d.post('/dashboard/login', { token: TOKEN });
    expect(right.status).toBe(429);
    expect(right.headers.get('set-cookie')).toBeNull();
    expect((await d.get('/dashboard/turns', { authorization: `Bearer ${TOKEN}` })).status).toBe(429);
    clock += 10 * 60_000;
    expect((await d.post('/dashboard/login', { token: TOKEN })).status).toBe(303);
  });

  it('accepts Authorization: Bearer and counts a wrong bearer token as a failed sign-in', async () => {
    const ok = await d.get('/dashboard/turns', { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('<h1>Turns</h1>');
    const bad = await d.get('/dashboard/turns', { authorization: 'Bearer not-the-token' });
    expect(bad.status).toBe(401);
    await d.get('/dashboard/turns', { authorization: 'Bearer not-the-token' });
    expect((await d.get('/dashboard/turns', { authorization: 'Bearer not-the-token' })).status).toBe(429);
  });

  it('signs out: the session ends on the server, not only in the browser', async () => {
    const cookie = await d.signIn();
    const page = await (await d.get('/dashboard/turns', { cookie })).text();
    const out = await d.post('/dashboard/logout', { form_token: formToken(page) }, { cookie });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    expect((await d.get('/dashboard/turns', { cookie })).status).toBe(303);
  });

  it('refuses forms without the session form token or from another origin (CSRF)', async () => {
    const cookie = await d.signIn();
    const token = formToken(await (await d.get('/dashboard/turns', { cookie })).text());
    expect((await d.post('/dashboard/logout', {}, { cookie })).status).toBe(403);
    expect((await d.post('/dashboard/logout', { form_token: 'forged' }, { cookie })).status).toBe(403);
    expect((await d.post('/dashboard/logout', { form_token: token }, { cookie, origin: 'https://evil.example' })).status).toBe(403);
    expect((await d.post('/dashboard/login', { token: TOKEN }, { origin: 'https://evil.example' })).status).toBe(403);
    // Still signed in: none of those went through.
    expect((await d.get('/dashboard/turns', { cookie })).status).toBe(200);
  });

  it('expires sessions after their lifetime', async () => {
    const cookie = await d.signIn();
    clock += 12 * 3600_000 + 1;
    expect((await d.get('/dashboard/turns', { cookie })).status).toBe(303);
  });
});

describe('HERMES_DASHBOARD_TOKEN', () => {
  it('is off when unset, and a too-short token is refused at start with one line', () => {
    const off = loadConfig({}, dir);
    expect(off.ok && off.config.dashboard).toBeUndefined();
    const short = loadConfig({ HERMES_DASHBOARD_TOKEN: 'short-secret' }, dir);
    expect(short.ok).toBe(false);
    if (!short.ok) {
      expect(short.errors).toHaveLength(1);
      expect(short.errors[0]).toMatch(/^HERMES_DASHBOARD_TOKEN is too short: use at least 16 random characters/);
      expect(short.errors[0]).not.toContain('short-secret');
    }
    const on = loadConfig({ HERMES_DASHBOARD_TOKEN: TOKEN }, dir);
    expect(on.ok && on.config.dashboard).toEqual({ token: TOKEN, evalsDir: path.join(dir, 'evals', 'results'), host: '127.0.0.1' });
  });
});

describe('HERMES_DASHBOARD_HOST', () => {
  it('defaults to this machine only, takes an address or host name, and refuses anything else with one line', () => {
    const all = loadConfig({ HERMES_DASHBOARD_TOKEN: TOKEN, HERMES_DASHBOARD_HOST: '0.0.0.0' }, dir);
    expect(all.ok && all.config.dashboard?.host).toBe('0.0.0.0');
    const v6 = loadConfig({ HERMES_DASHBOARD_TOKEN: TOKEN, HERMES_DASHBOARD_HOST: '::1' }, dir);
    expect(v6.ok && v6.config.dashboard?.host).toBe('::1');
    const named = loadConfig({ HERMES_DASHBOARD_TOKEN: TOKEN, HERMES_DASHBOARD_HOST: 'localhost' }, dir);
    expect(named.ok && named.config.dashboard?.host).toBe('localhost');
    const bad = loadConfig({ HERMES_DASHBOARD_TOKEN: TOKEN, HERMES_DASHBOARD_HOST: 'http://0.0.0.0:3000' }, dir);
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.errors).toHaveLength(1);
      expect(bad.errors[0]).toMatch(/^HERMES_DASHBOARD_HOST="http:\/\/0.0.0.0:3000" is not an address to listen on/);
    }
  });

  it('is the only address the bot\'s HTTP server listens on when only the dashboard needs it', async () => {
    const server = createBotHttp({ log: pino({ level: 'silent' }), isReady: () => true, dashboard: { handle: () => undefined } });
    expect(listenHost({ slackHttp: false, dashboardHost: '127.0.0.1' })).toBe('127.0.0.1');
    // Slack must reach its events route: then every interface, whatever HERMES_DASHBOARD_HOST says.
    expect(listenHost({ slackHttp: true, dashboardHost: '127.0.0.1' })).toBeUndefined();
    const port = await server.start(0, listenHost({ slackHttp: false, dashboardHost: '127.0.0.1' }));
    try {
      const other = firstNonLoopbackV4();
      // Reachable on loopback; on the machine's other address nothing listens on that port.
      expect((await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
      if (other) await expect(fetch(`http://${other}:${port}/healthz`, { signal: AbortSignal.timeout(5_000) })).rejects.toThrow();
    } finally {
      await server.stop();
    }
  });
});

/** An IPv4 address of this machine outside 127/8, if it has one (containers usually do). */
function firstNonLoopbackV4(): string | undefined {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}
