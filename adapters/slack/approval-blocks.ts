/**
 * Block Kit for approval prompts. Pure.
 *
 * The arguments are shown exactly, as a JSON code block; only the display is truncated (a section
 * holds at most 3,000 characters) and the truncation says so. The buttons carry nothing but the
 * approval id: what runs is always the stored record, never something echoed back by a client.
 */
import type { types } from '@slack/bolt';
import type { ApprovalResolution, ApprovalView } from '../../src/gateway/ports.js';
import { escapeSlack } from './render-mrkdwn.js';
import { approvalOutcomeLine, approvalSourcesLine } from '../../src/gateway/user-messages.js';

export const APPROVE_ACTION = 'hermes_approve';
export const DENY_ACTION = 'hermes_deny';
const SECTION_LIMIT = 3_000;

export function argsBlockText(view: ApprovalView): string {
  const head = `*Approval needed* for \`${escapeSlack(view.toolName)}\` with these arguments:\n`;
  const open = '```\n';
  const close = '\n```';
  const note = '\n… (truncated for display; the full arguments are what will run)';
  const args = escapeSlack(view.argsJson);
  const room = SECTION_LIMIT - head.length - open.length - close.length;
  if (args.length <= room) return head + open + args + close;
  // Never end a cut inside an entity like &amp; — it would display as garbage.
  let cut = args.slice(0, room - note.length);
  cut = cut.replace(/&[a-z]{0,4}$/, '');
  return head + open + cut + note + close;
}

/** The provenance block: outside text read before the request, each source quoted as code. */
export function sourcesBlocks(view: ApprovalView): types.KnownBlock[] {
  if (!view.sources?.length) return [];
  const text = approvalSourcesLine(view.sources, (s) => `\`${escapeSlack(s.replace(/`/g, "'"))}\``);
  return [{ type: 'context', elements: [{ type: 'mrkdwn', text: text.slice(0, SECTION_LIMIT) }] }];
}

/** The tool's own words about the call (a schedule's next runs), as a section above the arguments. */
function descriptionBlocks(view: ApprovalView): types.KnownBlock[] {
  if (!view.description) return [];
  return [{ type: 'section', text: { type: 'mrkdwn', text: escapeSlack(view.description).slice(0, SECTION_LIMIT) } }];
}

export function approvalBlocks(view: ApprovalView, mention: string): (types.KnownBlock)[] {
  return [
    ...descriptionBlocks(view),
    { type: 'section', text: { type: 'mrkdwn', text: argsBlockText(view) } },
    ...sourcesBlocks(view),
    { type: 'context', elements: [{ type: 'mrkdwn', text: `Requested by ${mention}. Only they or an admin can decide.` }] },
    {
      type: 'actions',
      block_id: 'hermes_approval',
      elements: [
        { type: 'button', action_id: APPROVE_ACTION, text: { type: 'plain_text', text: 'Approve' }, style: 'primary', value: view.id },
        { type: 'button', action_id: DENY_ACTION, text: { type: 'plain_text', text: 'Deny' }, style: 'danger', value: view.id },
      ],
    },
  ];
}

export function approvalFallbackText(view: ApprovalView): string {
  return `Approval needed for ${view.toolName}`;
}

/** The edited prompt: same arguments, no buttons, one line naming outcome and decider. */
export function resolvedBlocks(view: ApprovalView, resolution: ApprovalResolution, mention: (userId: string) => string): (types.KnownBlock)[] {
  return [
    ...descriptionBlocks(view),
    { type: 'section', text: { type: 'mrkdwn', text: argsBlockText(view) } },
    ...sourcesBlocks(view),
    { type: 'context', elements: [{ type: 'mrkdwn', text: resolutionLine(resolution, mention) }] },
  ];
}

/** The outcome wording is the gateway's, shared by every platform; only the mention is Slack's. */
export function resolutionLine(resolution: ApprovalResolution, mention: (userId: string) => string): string {
  return approvalOutcomeLine(resolution.outcome, resolution.decidedBy ? mention(resolution.decidedBy.userId) : undefined);
}
