import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { honouringRateLimits, normaliseApiUrl } from '../../adapters/slack/slack-calls.js';
import { checkScopes } from '../../adapters/slack/startup-check.js';
import { FULL_SCOPES } from '../fakes/slack/fake-slack.js';

const rateLimited = (retryAfter: number) => Object.assign(new Error('rate limited'), { code: 'slack_webapi_rate_limited_error', retryAfter });

describe('honouringRateLimits', () => {
  it('waits Retry-After and tries again after a 429', async () => {
    const waits: number[] = [];
    let calls = 0;
    const out = await honouringRateLimits(async () => {
      if (++calls < 3) throw rateLimited(2);
      return 'done';
    }, async (ms) => void waits.push(ms));
    expect(out).toBe('done');
    expect(waits).toEqual([2000, 2000]);
  });

  it('gives up after a bounded number of waits, and on absurd Retry-After values', async () => {
    let calls = 0;
    await expect(honouringRateLimits(async () => {
      calls++;
      throw rateLimited(1);
    }, async () => undefined)).rejects.toThrow('rate limited');
    expect(calls).toBe(4);
    calls = 0;
    await expect(honouringRateLimits(async () => {
      calls++;
      throw rateLimited(3600);
    }, async () => undefined)).rejects.toThrow('rate limited');
    expect(calls).toBe(1);
  });

  it('never repeats a call that failed any other way (it may have landed)', async () => {
    let calls = 0;
    await expect(honouringRateLimits(async () => {
      calls++;
      throw Object.assign(new Error('timeout'), { code: 'slack_webapi_request_error' });
    }, async () => undefined)).rejects.toThrow('timeout');
    expect(calls).toBe(1);
  });
});

describe('startup scope check', () => {
  it('accepts the manifest scopes', () => {
    expect(checkScopes(FULL_SCOPES)).toEqual({ errors: [], warnings: [] });
  });
  it('names the missing required scope and the fix', () => {
    const r = checkScopes(FULL_SCOPES.filter((s) => s !== 'app_mentions:read' && s !== 'users:read'));
    expect(r.errors).toEqual([expect.stringMatching(/app_mentions:read.*add the bot scope app_mentions:read.*reinstall/)]);
    expect(r.warnings).toEqual([expect.stringMatching(/users:read/)]);
  });
  it('the manifest in the repo asks for every scope the check knows, and turns the assistant pane on with its events', () => {
    const manifest = parseYaml(readFileSync(path.join(import.meta.dirname, '../../adapters/slack/manifest.yaml'), 'utf8')) as {
      features: { assistant_view?: { assistant_description?: string; suggested_prompts?: Array<{ title: string; message: string }> } };
      oauth_config: { scopes: { bot: string[] } };
      settings: { event_subscriptions: { bot_events: string[] } };
    };
    expect(checkScopes(manifest.oauth_config.scopes.bot)).toEqual({ errors: [], warnings: [] });
    expect(manifest.oauth_config.scopes.bot).toContain('assistant:write');
    expect(manifest.features.assistant_view?.assistant_description).toBeTruthy();
    expect(manifest.features.assistant_view?.suggested_prompts?.every((p) => p.title && p.message)).toBe(true);
    expect(manifest.settings.event_subscriptions.bot_events).toEqual(expect.arrayContaining(['app_mention', 'message.im', 'message.channels', 'message.groups', 'assistant_thread_started', 'assistant_thread_context_changed']));
  });
  it('a token without assistant:write starts, with one warning that names what is missing and the fix', () => {
    const r = checkScopes(FULL_SCOPES.filter((s) => s !== 'assistant:write'));
    expect(r.errors).toEqual([]);
    expect(r.warnings).toEqual([expect.stringMatching(/lacks the assistant:write scope.*suggested prompts.*rest works without it.*add the bot scope assistant:write/)]);
  });
  it('skips the check with a warning when Slack sends no scope header', () => {
    expect(checkScopes(undefined)).toMatchObject({ errors: [], warnings: [expect.stringMatching(/x-oauth-scopes/)] });
  });
});

describe('normaliseApiUrl', () => {
  it('adds the trailing slash the WebClient needs', () => {
    expect(normaliseApiUrl('http://127.0.0.1:9/api')).toBe('http://127.0.0.1:9/api/');
    expect(normaliseApiUrl('https://slack.com/api/')).toBe('https://slack.com/api/');
    expect(normaliseApiUrl(undefined)).toBeUndefined();
  });
});
