import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, NO_MODEL_KEY } from '../../src/settings/load-config.js';
import { FAKE_OPENAI_KEY } from '../helpers/fake-secrets.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('config', () => {
  it('has working defaults with nothing set', () => {
    const r = loadConfig({}, os.tmpdir());
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.model.name).toBe('gpt-4o-mini');
    expect(r.config.model.temperature).toBe(0.2);
    expect(r.config.model.maxTokens).toBe(2048);
    expect(r.config.model.timeoutMs).toBe(60_000);
    expect(r.config.limits).toMatchObject({ maxSteps: 10, toolTimeoutMs: 30_000, approvalTtlMs: 1_800_000 });
    expect(r.config.port).toBe(3000);
    expect(r.config.slack).toBeUndefined();
    expect(r.config.discord).toBeUndefined();
    expect(r.config.dataDir).toBe(path.join(os.tmpdir(), 'data'));
  });

  it('reports one line per problem, naming the variable and the fix', () => {
    const r = loadConfig({
      HERMES_MAX_STEPS: 'ten',
      OPENAI_BASE_URL: 'localhost:11434',
      SLACK_BOT_TOKEN: 'xoxb-123',
      HERMES_ADMINS: 'U123',
      HERMES_NET_ALLOW: 'http://x',
      HERMES_TIMEZONE: 'Mars/Olympus',
      DISCORD_API_URL: 'https://discord.com/api/v10',
      DISCORD_TOKEN: 'abc',
    }, os.tmpdir());
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const joined = r.errors.join('\n');
    for (const name of ['HERMES_MAX_STEPS', 'OPENAI_BASE_URL', 'SLACK_SIGNING_SECRET', 'HERMES_ADMINS', 'HERMES_NET_ALLOW', 'HERMES_TIMEZONE', 'DISCORD_API_URL']) {
      expect(joined).toContain(name);
    }
    expect(r.errors.every((e) => !e.includes('\n'))).toBe(true);
    expect(r.errors.length).toBe(7);
  });

  it('takes postgres:// store URLs and HERMES_FAILOVER_S, and refuses other stores without echoing the URL', () => {
    const ok = loadConfig({ HERMES_STORE_URL: 'postgres://hermes:pw@db:5432/hermes', HERMES_FAILOVER_S: '30' }, os.tmpdir());
    expect(ok.ok && ok.config.storeUrl).toBe('postgres://hermes:pw@db:5432/hermes');
    expect(ok.ok && ok.config.failoverS).toBe(30);
    const defaults = loadConfig({}, os.tmpdir());
    expect(defaults.ok && defaults.config.failoverS).toBe(15);
    const bad = loadConfig({ HERMES_STORE_URL: 'mysql://root:hunter2@db/x', HERMES_FAILOVER_S: '1' }, os.tmpdir());
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.errors).toHaveLength(2);
    expect(bad.errors.find((e) => e.startsWith('HERMES_STORE_URL'))).toMatch(/postgres:\/\//);
    expect(bad.errors.join('\n')).not.toContain('hunter2');
    expect(bad.errors.find((e) => e.includes('HERMES_FAILOVER_S'))).toBeDefined();
  });

  it('accepts Slack HTTP mode, Socket Mode and Discord settings', () => {
    const r = loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 's', SLACK_APP_TOKEN: 'xapp-1', SLACK_API_URL: 'http://127.0.0.1:9/api', DISCORD_TOKEN: 't', DISCORD_GUILD_ID: '123', HERMES_ADMINS: 'slack:U1, discord:42' }, os.tmpdir());
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.slack).toMatchObject({ botToken: 'xoxb-1', signingSecret: 's', appToken: 'xapp-1' });
    expect(r.config.discord).toMatchObject({ token: 't', guildId: '123' });
    expect(r.config.admins).toEqual(['slack:U1', 'discord:42']);
  });

  it('names each variable once, whichever area it belongs to', () => {
    const bad: Record<string, string> = {
      OPENAI_BASE_URL: 'ftp://x',
      HERMES_TOOL_MODE: 'xml',
      HERMES_TEMPERATURE: 'hot',
      HERMES_MAX_TOKENS: '0',
      HERMES_MODEL_TIMEOUT_MS: '-1',
      HERMES_MODEL_RETRIES: '1.5',
      SLACK_API_URL: 'nope',
      DISCORD_GUILD_ID: 'abc',
      PORT: '70000',
      HERMES_STORE_URL: 'redis://x',
      HERMES_CONTEXT_TOKENS: '100',
      HERMES_TOOL_TIMEOUT_MS: 'x',
      HERMES_APPROVAL_TTL_MS: '0',
      HERMES_MAX_CONCURRENT_TURNS: '0',
      HERMES_PROGRESS_DELAY_MS: 'soon',
      HERMES_SEARXNG_URL: 'searx.local',
      LOG_LEVEL: 'loud',
      HERMES_THREAD_CONTEXT_MESSAGES: '5000',
      HERMES_FAILOVER_S: '1',
    };
    for (const [name, value] of Object.entries(bad)) {
      const r = loadConfig({ [name]: value }, os.tmpdir());
      expect(r.ok, name).toBe(false);
      if (r.ok) continue;
      expect(r.errors, name).toHaveLength(1);
      expect(r.errors[0]).toMatch(new RegExp(`^${name}=${JSON.stringify(value).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} .*: `));
    }
  });

  it('treats a blank value as unset, and keeps a cross-variable rule when a neighbour is also wrong', () => {
    const blank = loadConfig({ HERMES_MAX_STEPS: '  ', PORT: '' }, os.tmpdir());
    expect(blank.ok && [blank.config.limits.maxSteps, blank.config.port]).toEqual([10, 3000]);
    const r = loadConfig({ SLACK_BOT_TOKEN: 'xoxb-1', SLACK_API_URL: 'nope' }, os.tmpdir());
    expect(!r.ok && r.errors.map((e) => e.split(' ')[0])).toEqual(['SLACK_API_URL="nope"', 'SLACK_BOT_TOKEN']);
  });

  it('never echoes a secret value in an error line', () => {
    const r = loadConfig({ SLACK_BOT_TOKEN: FAKE_OPENAI_KEY, SLACK_SIGNING_SECRET: 's', HERMES_STORE_URL: 'redis://hermes:hunter2secret@db/x', OPENAI_BASE_URL: `ftp://u:${FAKE_OPENAI_KEY}@h` }, os.tmpdir());
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toHaveLength(3);
    const joined = r.errors.join('\n');
    expect(joined).not.toContain(FAKE_OPENAI_KEY);
    expect(joined).not.toContain('hunter2secret');
    expect(joined).toMatch(/^SLACK_BOT_TOKEN does not look like a bot token/m);
  });

  it('warns about platform settings that stay off without their token', () => {
    const r = loadConfig({ SLACK_SIGNING_SECRET: 's', DISCORD_GUILD_ID: '1', OPENAI_API_KEY: 'k' }, os.tmpdir());
    expect(r.ok && r.warnings.map((w) => w.split(' ')[0])).toEqual(['SLACK_SIGNING_SECRET', 'DISCORD_GUILD_ID']);
  });

  it('warns once, with the fix, when there is no OPENAI_API_KEY for the default server', () => {
    const none = loadConfig({}, os.tmpdir());
    expect(none.ok && none.warnings.filter((w) => w.includes('OPENAI_API_KEY'))).toEqual([NO_MODEL_KEY]);
    for (const env of [{ OPENAI_API_KEY: 'sk-x' }, { OPENAI_BASE_URL: 'http://localhost:11434/v1' }]) {
      const r = loadConfig(env, os.tmpdir());
      expect(r.ok && r.warnings).toEqual([]);
    }
  });

  it('validates the tool settings file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-cfg-'));
    await writeFile(path.join(dir, 'hermes.config.yaml'), 'tools:\n  send_webhook:\n    needsApproval: false\n    timeoutMs: 5000\n');
    const ok = loadConfig({}, dir);
    expect(ok.ok && ok.config.tools.send_webhook).toEqual({ needsApproval: false, timeoutMs: 5000 });
    await writeFile(path.join(dir, 'hermes.config.yaml'), 'tools:\n  send_webhook:\n    needsAproval: false\n');
    const bad = loadConfig({}, dir);
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.errors[0]).toMatch(/hermes.config.yaml: tools.send_webhook/);
    const both = loadConfig({ HERMES_MAX_STEPS: 'x' }, dir);
    expect(!both.ok && both.errors.map((e) => e.split(' ')[0])).toEqual(['HERMES_MAX_STEPS="x"', 'hermes.config.yaml:']);
    await rm(dir, { recursive: true, force: true });
  });

  it('npm start (tsx src/main.ts) exits 2 with clear lines on a bad value', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, HERMES_MAX_STEPS: '0', SLACK_BOT_TOKEN: 'xoxb-1' },
      encoding: 'utf8',
      timeout: 60_000,
      input: '',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/HERMES_MAX_STEPS/);
    expect(r.stderr).toMatch(/SLACK_SIGNING_SECRET/);
  }, 90_000); // one real process start; on a loaded machine tsx alone can take half a minute
});
