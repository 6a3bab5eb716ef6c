import { describe, expect, it } from 'vitest';
import { channelsFileSchema, globMatch, policyAdmits, policyKeys, resolvePolicy, skillAllowed, toolAllowed, type ChannelsFile } from '../../src/settings/channel-policies.js';
import { loadConfig } from '../../src/settings/load-config.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const slackChannel = { platform: 'slack', workspaceId: 'T1', channelId: 'CENG', isDm: false };
const discordThread = { platform: 'discord', workspaceId: '111111111111111111', channelId: '333333333333333333', parentChannelId: '222222222222222222', isDm: false };

describe('globs', () => {
  it('matches names and * runs, literally otherwise', () => {
    expect(globMatch('fetch_url', 'fetch_url')).toBe(true);
    expect(globMatch('fetch_url', 'fetch_urls')).toBe(false);
    expect(globMatch('mcp__github__*', 'mcp__github__create_issue')).toBe(true);
    expect(globMatch('mcp__github__*', 'mcp__gitlab__create_issue')).toBe(false);
    expect(globMatch('*', 'anything')).toBe(true);
    expect(globMatch('mcp__*__delete_*', 'mcp__github__delete_repo')).toBe(true);
    expect(globMatch('mcp__*__delete_*', 'mcp__github__create_repo')).toBe(false);
    expect(globMatch('a*a', 'a')).toBe(false); // the two ends may not share a character
    expect(globMatch('send.webhook', 'send_webhook')).toBe(false); // a dot is a dot
  });

  it('deny wins over allow; an allow list offers only what it matches', () => {
    expect(toolAllowed({ allow: ['mcp__github__*'], deny: ['mcp__github__delete_*'] }, 'mcp__github__delete_repo')).toBe(false);
    expect(toolAllowed({ allow: ['mcp__github__*'], deny: ['mcp__github__delete_*'] }, 'mcp__github__list_issues')).toBe(true);
    expect(toolAllowed({ allow: ['mcp__github__*'] }, 'fetch_url')).toBe(false);
    expect(toolAllowed({ deny: ['send_webhook'] }, 'fetch_url')).toBe(true);
    expect(toolAllowed({ allow: ['*'], deny: ['*'] }, 'calculator')).toBe(false);
    expect(toolAllowed({}, 'calculator')).toBe(true);
  });

  it('skills are named skill:<name>; a tools-only allow list says nothing about them', () => {
    expect(skillAllowed({ deny: ['skill:pdf-*'] }, 'pdf-report')).toBe(false);
    expect(skillAllowed({ allow: ['use_skill', 'calculator'] }, 'pdf-report')).toBe(true);
    expect(skillAllowed({ allow: ['use_skill', 'skill:notes'] }, 'pdf-report')).toBe(false);
    expect(skillAllowed({ allow: ['use_skill', 'skill:notes'] }, 'notes')).toBe(true);
  });
});

describe('resolving the policy of a place', () => {
  const file: ChannelsFile = channelsFileSchema.parse({
    default: { tools: { deny: ['send_webhook'] }, instructions: 'Be brief.', daily_tokens: 1000, respond: 'mention' },
    dm: { tools: { allow: ['get_current_time', 'calculator'] }, instructions: 'This is a DM.' },
    'slack:CENG': { tools: { allow: ['mcp__github__*'] }, instructions: 'Engineering channel.', approvers: ['slack:ULEAD'], model: 'big-model' },
    'discord:guild:111111111111111111': { busy_mode: 'queue', instructions: 'Guild rule.', respond: 'all' },
    'discord:channel:222222222222222222': { tools: { deny: [] }, users: ['discord:444444444444444444'], roles: ['555555555555555555'] },
  });

  it('lists the keys from least to most specific', () => {
    expect(policyKeys(slackChannel)).toEqual(['default', 'slack:CENG']);
    expect(policyKeys(discordThread)).toEqual(['default', 'discord:guild:111111111111111111', 'discord:channel:222222222222222222', 'discord:channel:333333333333333333']);
    expect(policyKeys({ platform: 'slack', workspaceId: 'T1', channelId: 'D1', isDm: true })).toEqual(['default', 'dm', 'slack:D1']);
    expect(policyKeys({ platform: 'discord', workspaceId: '@dm', channelId: '666666666666666666', isDm: true })).toEqual(['default', 'dm', 'discord:channel:666666666666666666']);
  });

  it('merges fields over default: allow and deny separately, instructions added after', () => {
    const p = resolvePolicy(file, slackChannel);
    expect(p.sources).toEqual(['default', 'slack:CENG']);
    expect(p.tools).toEqual({ deny: ['send_webhook'], allow: ['mcp__github__*'] });
    expect(p.instructions).toEqual(['Be brief.', 'Engineering channel.']);
    expect(p.model).toBe('big-model');
    expect(p.approvers).toEqual(['slack:ULEAD']);
    expect(p.dailyTokens).toBe(1000);
    expect(p.respond).toBe('mention');
  });

  it('a Discord thread takes its guild and its parent channel, the channel clearing an inherited deny', () => {
    const p = resolvePolicy(file, discordThread);
    expect(p.tools).toEqual({ deny: [] });
    expect(p.instructions).toEqual(['Be brief.', 'Guild rule.']);
    expect(p.busyMode).toBe('queue');
    expect(p.respond).toBe('all');
    expect(p.users).toEqual(['discord:444444444444444444']);
  });

  it('an unlisted place gets default; no file gets nothing', () => {
    expect(resolvePolicy(file, { ...slackChannel, channelId: 'COTHER' }).sources).toEqual(['default']);
    expect(resolvePolicy(undefined, slackChannel)).toMatchObject({ sources: [], tools: {}, instructions: [], respond: 'mention', dailyTokens: 0 });
  });

  it('users and roles admit as HERMES_ALLOW does', () => {
    const p = resolvePolicy(file, discordThread);
    expect(policyAdmits(p, 'discord', '444444444444444444', [])).toBe(true);
    expect(policyAdmits(p, 'discord', '777777777777777777', ['555555555555555555'])).toBe(true);
    expect(policyAdmits(p, 'discord', '777777777777777777', ['999999999999999999'])).toBe(false);
    expect(policyAdmits(resolvePolicy(file, slackChannel), 'slack', 'UANY', undefined)).toBe(true);
  });
});

describe('channels: in the config file', () => {
  const withFile = (text: string) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hermes-policy-'));
    try {
      writeFileSync(path.join(dir, 'hermes.config.yaml'), text);
      return loadConfig({ OPENAI_API_KEY: 'k' }, dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('is read and validated', () => {
    const ok = withFile('channels:\n  default:\n    tools: {deny: [send_webhook]}\n  slack:C0123:\n    respond: all\n');
    expect(ok.ok && ok.config.channels).toEqual({ default: { tools: { deny: ['send_webhook'] } }, 'slack:C0123': { respond: 'all' } });
  });

  it('names the key, the field and the fix for each problem', () => {
    const bad = withFile('channels:\n  general:\n    respond: sometimes\n  slack:C0123:\n    busy_mode: wait\n    approvers: [bob]\n');
    expect(bad.ok).toBe(false);
    const errors = bad.ok ? [] : bad.errors;
    expect(errors.some((e) => e.includes('channels.general') && e.includes('is not a policy key'))).toBe(true);
    expect(errors.some((e) => e.includes('channels.slack:C0123.busy_mode'))).toBe(true);
    expect(errors.some((e) => e.includes('channels.slack:C0123.approvers.0') && e.includes('slack:U0123ABC'))).toBe(true);
    expect(errors.every((e) => e.includes('docs/access-and-limits.md'))).toBe(true);
  });

  it('an unquoted role id (a YAML number) is refused with the fix, not read with lost digits', () => {
    const bad = withFile('channels:\n  discord:channel:112233445566778899:\n    roles: [445566778899001122]\n');
    expect(bad.ok ? [] : bad.errors).toEqual([expect.stringContaining('channels.discord:channel:112233445566778899.roles.0: is not text: quote a role id in YAML')]);
    const ok = withFile('channels:\n  discord:channel:112233445566778899:\n    roles: ["445566778899001122"]\n');
    expect(ok.ok && ok.config.channels['discord:channel:112233445566778899']?.roles).toEqual(['445566778899001122']);
  });

  it('HERMES_DAILY_TOKENS is a whole number', () => {
    const r = loadConfig({ OPENAI_API_KEY: 'k', HERMES_DAILY_TOKENS: 'lots' }, os.tmpdir());
    expect(r.ok).toBe(false);
    expect(r.ok ? [] : r.errors).toEqual([expect.stringContaining('HERMES_DAILY_TOKENS')]);
    const ok = loadConfig({ OPENAI_API_KEY: 'k', HERMES_DAILY_TOKENS: '50000' }, os.tmpdir());
    expect(ok.ok && ok.config.usage.botDailyTokens).toBe(50000);
  });
});
