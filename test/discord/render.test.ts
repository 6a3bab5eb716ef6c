import { describe, expect, it } from 'vitest';
import { ApplicationCommandType, ButtonStyle, ComponentType, MessageFlags, type APIApplicationCommand } from 'discord-api-types/v10';
import { conversationOf, readableText } from '../../adapters/discord/inbound.js';
import { interactionTokenExpired } from '../../adapters/discord/interactions.js';
import { HERMES_COMMAND, sameCommand } from '../../adapters/discord/register-commands.js';
import { approvalCustomId, approvalMessage, approvalMessages, parseApprovalCustomId, resolvedApprovalMessage, textMessage } from '../../adapters/discord/render.js';
import type { ApprovalView } from '../../src/basics/ports.js';

const view: ApprovalView = {
  id: 'ap_123',
  toolName: 'send_webhook',
  argsDigest: 'd'.repeat(64),
  argsJson: JSON.stringify({ url: 'https://example.com/hook', body: { text: 'hi ```x```' } }, null, 2),
  requester: { platform: 'discord', workspaceId: 'g1', userId: '42' },
  expiresAt: Date.UTC(2030, 0, 1),
};

describe('discord message bodies', () => {
  it('a text part suppresses embeds, pings nobody and references the message it answers', () => {
    expect(textMessage('hi', '777')).toEqual({
      content: 'hi',
      flags: MessageFlags.SuppressEmbeds,
      allowed_mentions: { parse: [], users: [], roles: [], replied_user: true },
      message_reference: { message_id: '777', fail_if_not_exists: false },
    });
    expect(textMessage('more')).not.toHaveProperty('message_reference');
    expect(textMessage('more').allowed_mentions?.replied_user).toBe(false);
  });

  it('an approval prompt shows tool and arguments in a json block, with Approve and Deny buttons', () => {
    const body = approvalMessage(view, '9');
    expect(body.content).toContain('`send_webhook`');
    expect(body.content).toContain('<@42>');
    expect(body.content).toContain('```json\n{\n  "url": "https://example.com/hook"');
    // A ``` inside the arguments cannot end the code block early.
    expect(body.content!.split('\n').filter((l) => l.startsWith('```'))).toHaveLength(2);
    const row = body.components![0] as { type: number; components: Array<{ style: number; label: string; custom_id: string }> };
    expect(row.type).toBe(ComponentType.ActionRow);
    expect(row.components.map((b) => [b.label, b.style, b.custom_id])).toEqual([
      ['Approve', ButtonStyle.Success, 'hermes:approve:ap_123'],
      ['Deny', ButtonStyle.Danger, 'hermes:deny:ap_123'],
    ]);
  });

  it('shows huge arguments in full over several messages before the one with the buttons, never cut', () => {
    const argsJson = JSON.stringify({ data: 'z'.repeat(5000), lines: Array.from({ length: 200 }, (_, i) => `line ${i}`) }, null, 2);
    const big = { ...view, argsJson };
    const bodies = approvalMessages(big, '9');
    expect(bodies.length).toBeGreaterThan(2);
    for (const b of bodies) expect(b.content!.length).toBeLessThanOrEqual(2000);
    expect(bodies[0]!.message_reference?.message_id).toBe('9');
    expect(bodies.slice(0, -1).every((b) => !b.components)).toBe(true);
    expect(bodies.at(-1)!.components).toHaveLength(1);
    expect(bodies.at(-1)!.content).toContain(`sha256 \`${'d'.repeat(64)}\``);
    const shown = bodies.slice(0, -1).map((b) => /```json\n([\s\S]*)\n```$/.exec(b.content!)![1]).join('');
    expect(shown.replace(/\n/g, '')).toBe(argsJson.replace(/\n/g, ''));
    expect(JSON.stringify(bodies)).not.toMatch(/not shown|truncat/);
    const resolved = resolvedApprovalMessage(big, { outcome: 'approved', decidedBy: view.requester });
    expect(resolved.content!.length).toBeLessThanOrEqual(2000);
    expect(resolved.content).toMatch(/messages above[\s\S]*approved by <@42>/);
  });

  it('a resolved prompt has no buttons and names the outcome and who decided', () => {
    const approved = resolvedApprovalMessage(view, { outcome: 'approved', decidedBy: { platform: 'discord', workspaceId: 'g1', userId: '42' } });
    expect(approved.components).toEqual([]);
    expect(approved.content).toMatch(/approved by <@42>/);
    expect(resolvedApprovalMessage(view, { outcome: 'expired' }).content).toMatch(/expired/);
    expect(resolvedApprovalMessage(view, { outcome: 'denied', decidedBy: view.requester }).content).toMatch(/denied by <@42>/);
  });

  it('custom ids carry only the approval id, stay within 100 characters and round-trip', () => {
    expect(parseApprovalCustomId(approvalCustomId('deny', 'abc'))).toEqual({ action: 'deny', approvalId: 'abc' });
    expect(parseApprovalCustomId('someone-else:approve:1')).toBeNull();
    expect(() => approvalCustomId('approve', 'x'.repeat(100))).toThrow(RangeError);
  });
});

describe('discord inbound helpers', () => {
  const users = new Map([['5', { username: 'carol', globalName: 'Carol' }]]);

  it("strips the bot's mention in both forms and makes other mentions readable", () => {
    expect(readableText('<@99> hello <@!99> and <@5>, <@6>', '99', users)).toBe('hello and @Carol (<@5>), <@6>');
  });

  it('maps channels, threads and DMs to conversations', () => {
    expect(conversationOf('c1', 'g1', false)).toEqual({ platform: 'discord', workspaceId: 'g1', channelId: 'c1', isDm: false });
    expect(conversationOf('t1', 'g1', true)).toEqual({ platform: 'discord', workspaceId: 'g1', channelId: 't1', threadId: 't1', isDm: false });
    expect(conversationOf('d1', null, false)).toEqual({ platform: 'discord', workspaceId: '@dm', channelId: 'd1', isDm: true });
  });

  it('treats an interaction token as expired shortly before its 15 minutes are up', () => {
    expect(interactionTokenExpired(0, 10 * 60_000)).toBe(false);
    expect(interactionTokenExpired(0, 14 * 60_000 + 45_000)).toBe(true);
  });
});

describe('/hermes definition', () => {
  const registered = (over: Partial<APIApplicationCommand> = {}): APIApplicationCommand =>
    ({ ...HERMES_COMMAND, id: '1', application_id: '2', version: '3', default_member_permissions: null, type: ApplicationCommandType.ChatInput, ...over }) as APIApplicationCommand;

  it('matches what Discord returns for the same definition', () => {
    expect(sameCommand(registered(), HERMES_COMMAND)).toBe(true);
  });

  it('notices a changed description or option', () => {
    expect(sameCommand(registered({ description: 'old' }), HERMES_COMMAND)).toBe(false);
    expect(sameCommand(registered({ options: [] }), HERMES_COMMAND)).toBe(false);
  });
  it("lets a reminder ping its owner and nobody else", () => {
    const body = textMessage('⏰ <@42> Reminder: stand-up @everyone <@43>', undefined, '42');
    expect(body.allowed_mentions).toEqual({ parse: [], users: ['42'], roles: [], replied_user: false });
  });
});
