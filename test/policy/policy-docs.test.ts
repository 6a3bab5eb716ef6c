import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rereadConfigFile, type ConfigFile } from '../../src/settings/config-file.js';
import { resolvePolicy, skillAllowed, toolAllowed, type PolicyPlace } from '../../src/settings/channel-policies.js';

/**
 * The worked examples in docs/access-and-limits.md are real config: each YAML block under "Three
 * worked examples" is read as hermes.config.yaml is, and resolves to what the text around it says.
 */

const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/access-and-limits.md'), 'utf8');
const section = doc.slice(doc.indexOf('### Three worked examples'), doc.indexOf('## Reload'));
const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);

function read(yaml: string): ConfigFile {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hermes-policy-docs-'));
  try {
    const file = path.join(dir, 'hermes.config.yaml');
    writeFileSync(file, yaml);
    const r = rereadConfigFile(file);
    if (!r.ok) throw new Error(r.errors.join('\n'));
    return r.file;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const slack = (channelId: string, isDm = false): PolicyPlace => ({ platform: 'slack', workspaceId: 'T1', channelId, isDm });
const discord = (channelId: string, parentChannelId?: string): PolicyPlace => ({ platform: 'discord', workspaceId: '998877665544332211', channelId, isDm: false, ...(parentChannelId && { parentChannelId }) });

describe('the worked examples in docs/access-and-limits.md', () => {
  it('are three valid config files', () => {
    expect(blocks).toHaveLength(3);
    for (const b of blocks) expect(() => read(b)).not.toThrow();
  });

  it('1: the help channel answers everything, offers only its seven tools and faq skills, keeps the house rules first', () => {
    const p = resolvePolicy(read(blocks[0]!).channels, slack('C0HELPDESK'));
    expect(p.respond).toBe('all');
    expect(p.busyMode).toBe('queue');
    expect(p.dailyTokens).toBe(300000);
    expect(['web_search', 'fetch_url', 'search_conversations', 'get_current_time', 'use_skill', 'read_skill_file', 'send_webhook', 'run_code', 'calculator'].filter((t) => toolAllowed(p.tools, t))).toEqual(['web_search', 'fetch_url', 'search_conversations', 'get_current_time', 'use_skill', 'read_skill_file']);
    expect(skillAllowed(p.tools, 'faq-billing')).toBe(true);
    expect(skillAllowed(p.tools, 'deploy')).toBe(false);
    expect(p.instructions[0]).toContain('Never share credentials');
    expect(p.instructions[1]).toContain('public help channel');
    const elsewhere = resolvePolicy(read(blocks[0]!).channels, slack('C0RANDOM'));
    expect([elsewhere.respond, elsewhere.dailyTokens, toolAllowed(elsewhere.tools, 'run_code')]).toEqual(['mention', 0, true]);
  });

  it('2: GitHub tools only in #engineering and its threads, never deleting or merging; approvers and model there', () => {
    const file = read(blocks[1]!);
    const eng = resolvePolicy(file.channels, discord('112233445566778899'));
    const thread = resolvePolicy(file.channels, discord('101010101010101010', '112233445566778899'));
    const other = resolvePolicy(file.channels, discord('121212121212121212'));
    for (const p of [eng, thread]) {
      expect(toolAllowed(p.tools, 'mcp__github__create_issue')).toBe(true);
      expect(toolAllowed(p.tools, 'mcp__github__delete_repository')).toBe(false);
      expect(toolAllowed(p.tools, 'mcp__github__merge_pull_request')).toBe(false);
      expect(toolAllowed(p.tools, 'send_webhook')).toBe(false);
      expect(p.approvers).toEqual(['discord:223344556677889900', 'discord:role:334455667788990011']);
      expect(p.model).toBe('gpt-4.1');
    }
    expect(toolAllowed(other.tools, 'mcp__github__create_issue')).toBe(false);
    expect(toolAllowed(other.tools, 'fetch_url')).toBe(true);
  });

  it('3: DMs are for the listed people with a short tool list; one DM gets a larger budget', () => {
    const file = read(blocks[2]!);
    const dm = resolvePolicy(file.channels, slack('D0OTHERDM', true));
    const alice = resolvePolicy(file.channels, slack('D0ALICEDM', true));
    expect(dm.users).toEqual(['slack:U0ALICE', 'slack:U0BOB', 'discord:556677889900112233']);
    expect(toolAllowed(dm.tools, 'fetch_url')).toBe(false);
    expect(toolAllowed(dm.tools, 'create_reminder')).toBe(true);
    expect([dm.dailyTokens, alice.dailyTokens]).toEqual([50000, 200000]);
    expect(alice.tools).toEqual(dm.tools);
    expect(alice.model).toBe('gpt-4.1-mini');
    // A channel is not a DM: none of it applies there.
    expect(resolvePolicy(file.channels, slack('C0GENERAL')).sources).toEqual([]);
  });
});
