import { describe, expect, it } from 'vitest';
import { approvalBlocks, argsBlockText, resolvedBlocks } from '../../adapters/slack/approval-blocks.js';
import type { ApprovalView } from '../../src/gateway/ports.js';

const view = (argsJson: string): ApprovalView => ({
  id: 'ap_1',
  toolName: 'send_webhook',
  argsJson,
  requester: { platform: 'slack', workspaceId: 'T1', userId: 'U1' },
  expiresAt: 0,
});

describe('approval blocks', () => {
  it('shows the exact arguments and buttons carrying only the id', () => {
    const blocks = approvalBlocks(view('{\n  "url": "https://x.y/?a=1&b=<2>"\n}'), '<@U1>');
    const json = JSON.stringify(blocks);
    expect(json).toContain('send_webhook');
    expect(json).toContain('&amp;b=&lt;2&gt;');
    const actions = blocks.find((b) => b.type === 'actions');
    expect(actions).toMatchObject({
      elements: [
        { action_id: 'hermes_approve', value: 'ap_1', style: 'primary', text: { text: 'Approve' } },
        { action_id: 'hermes_deny', value: 'ap_1', text: { text: 'Deny' } },
      ],
    });
  });
  it('truncates long arguments for display only, within the 3,000 limit', () => {
    const text = argsBlockText(view(JSON.stringify({ body: '&'.repeat(10_000) })));
    expect(text.length).toBeLessThanOrEqual(3000);
    expect(text).toContain('truncated for display');
    expect(text).toMatch(/```$/);
    expect(text).not.toMatch(/&a?m?p?\n… \(truncated/);
  });
  it('resolved prompt has no buttons and names outcome and decider', () => {
    const blocks = resolvedBlocks(view('{}'), { outcome: 'denied', decidedBy: { platform: 'slack', workspaceId: 'T1', userId: 'U9' } }, (id) => `<@${id}>`);
    expect(blocks.some((b) => b.type === 'actions')).toBe(false);
    expect(JSON.stringify(blocks)).toContain('denied by <@U9>');
  });
});
