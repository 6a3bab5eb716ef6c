import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { approvalBlocks, resolvedBlocks } from '../../adapters/slack/approval-blocks.js';
import { approvalMessage } from '../../adapters/discord/render.js';
import { createShellAdapter } from '../../adapters/shell/shell-adapter.js';
import type { ApprovalView, GatewayApi } from '../../src/basics/ports.js';

/** Every platform's approval prompt names the outside text the turn read before the request. */

const view: ApprovalView = {
  id: 'a1',
  toolName: 'remember_fact',
  argsJson: '{\n  "fact": "x"\n}',
  argsDigest: 'd'.repeat(64),
  requester: { platform: 'slack', workspaceId: 'T', userId: 'U1' },
  expiresAt: Date.UTC(2030, 0, 1),
  sources: ['https://evil.example/page?a=1&b=2', 'thread context'],
};

describe('approval provenance', () => {
  it('Slack: a context block lists the sources, before and after the decision', () => {
    const text = JSON.stringify(approvalBlocks(view, '<@U1>'));
    expect(text).toContain('Before this request I read outside text: `https://evil.example/page?a=1&amp;b=2`, `thread context`.');
    expect(JSON.stringify(resolvedBlocks(view, { outcome: 'denied' }, (id) => `<@${id}>`))).toContain('`thread context`');
    expect(JSON.stringify(approvalBlocks({ ...view, sources: undefined }, '<@U1>'))).not.toContain('outside text');
  });

  it('Discord: a line under the arguments', () => {
    expect(approvalMessage(view).content).toContain('⚠️ Before this request I read outside text: `https://evil.example/page?a=1&b=2`, `thread context`.');
  });

  it('terminal: a line before the question', async () => {
    const output = new PassThrough();
    let printed = '';
    output.on('data', (d: Buffer) => (printed += d.toString()));
    const gateway: GatewayApi = {
      registerPort: () => undefined,
      handleMessage: async () => 'ignored',
      handleCommand: async () => ({ kind: 'private', text: '' }),
      decideApproval: async () => ({ kind: 'unknown', text: '' }),
    };
    const shell = createShellAdapter({ gateway, input: new PassThrough(), output });
    await shell.port.showApproval({ platform: 'shell', workspaceId: 'local', channelId: 'terminal', isDm: true }, view);
    expect(printed).toMatch(/Before this request I read outside text: https:\/\/evil\.example\/page\?a=1&b=2, thread context\.[^\n]*\nApprove\? \[y\/N\]/);
  });

  it('many sources are shortened, never dropped silently', () => {
    const many = Array.from({ length: 8 }, (_, i) => `https://s${i}.example/`);
    expect(approvalMessage({ ...view, sources: many }).content).toContain('and 3 more');
  });
});
