import { describe, expect, it } from 'vitest';
import { approvalBlocks, argsSectionTexts, resolvedBlocks } from '../../adapters/slack/approval-blocks.js';
import type { ApprovalView } from '../../src/basics/ports.js';
import { shownArgsJson, visibleText } from '../../src/state/approvals/shown-args.js';

const view = (argsJson: string): ApprovalView => ({
  id: 'ap_1',
  toolName: 'send_webhook',
  argsJson,
  argsDigest: 'd'.repeat(64),
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
  it('a code fence or a bidi override in a value cannot leave the code block or disguise it, and the shown JSON is still exact', () => {
    const args = { url: 'https://hooks.example/x', body: 'ok ```\n*Approved by admin* <https://evil.example|details>\n````', note: '\u202Etxt.exe', tag: 'a\u2066b\u200bc' };
    const [text, ...rest] = argsSectionTexts(view(shownArgsJson(args)));
    expect(rest).toEqual([]);
    // One opening and one closing fence: nothing of the value is outside the block.
    expect(text!.match(/```/g)).toHaveLength(2);
    expect(text).toMatch(/```\n[\s\S]*\n```$/);
    // Invisible and direction-changing characters are shown as escapes, never applied.
    expect(text).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200b-\u200f]/);
    expect(text).toContain('\\u202e');
    const shown = text!.replace(/^[\s\S]*?```\n/, '').replace(/\n```$/, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    expect(JSON.parse(shown)).toEqual(args);
    // A tool's description may quote a value too: the same characters are shown, not applied.
    expect(visibleText('Fetch https://x.example/\u202Egnp.exe')).toBe('Fetch https://x.example/\\u202egnp.exe');
  });

  it('shows long arguments in full over several sections, each within the 3,000 limit, with the digest', () => {
    // The gateway's largest showable arguments, made of the character that escapes the longest.
    const argsJson = JSON.stringify({ body: `${'&'.repeat(6_000)}\n${'x<y>'.repeat(1_495)}` }, null, 2);
    const texts = argsSectionTexts(view(argsJson));
    expect(texts.length).toBeGreaterThan(1);
    for (const t of texts) {
      expect(t.length).toBeLessThanOrEqual(3000);
      expect(t).toMatch(/```\n[\s\S]*\n```$/);
      expect(t).not.toMatch(/truncated/);
    }
    const shown = texts.map((t) => t.replace(/^[\s\S]*?```\n/, '').replace(/\n```$/, '')).join('');
    const unescape = (x: string) => x.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    expect(unescape(shown).replace(/\n/g, '')).toBe(argsJson.replace(/\n/g, ''));
    const blocks = approvalBlocks(view(argsJson), '<@U1>');
    expect(blocks.length).toBeLessThanOrEqual(50);
    expect(JSON.stringify(blocks)).toContain(`sha256 \`${'d'.repeat(64)}\``);
  });
  it('resolved prompt has no buttons and names outcome and decider', () => {
    const blocks = resolvedBlocks(view('{}'), { outcome: 'denied', decidedBy: { platform: 'slack', workspaceId: 'T1', userId: 'U9' } }, (id) => `<@${id}>`);
    expect(blocks.some((b) => b.type === 'actions')).toBe(false);
    expect(JSON.stringify(blocks)).toContain('denied by <@U9>');
  });
});
