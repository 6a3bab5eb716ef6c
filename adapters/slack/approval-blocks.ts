/**
 * Block Kit for approval prompts. Pure.
 *
 * The arguments are shown exactly and in full, as JSON code blocks: a section holds at most 3,000
 * characters, so long arguments continue over several sections of the same message (the gateway
 * refuses arguments longer than MAX_SHOWN_ARGS_CHARS before any prompt, which keeps this within
 * Slack's 50 blocks). The digest in the context line is the stored record's. The buttons carry
 * nothing but the approval id: what runs is always the stored record, never something echoed back.
 */
import type { types } from '@slack/bolt';
import type { ApprovalResolution, ApprovalView } from '../../src/basics/ports.js';
import { escapeSlack } from './render-mrkdwn.js';
import { approvalOutcomeLine, approvalSourcesLine } from '../../src/gateway/user-messages.js';

export const APPROVE_ACTION = 'hermes_approve';
export const DENY_ACTION = 'hermes_deny';
const SECTION_LIMIT = 3_000;
const OPEN = '```\n';
const CLOSE = '\n```';

/** The argument sections' texts: every character of the arguments, none cut, each within the limit. */
export function argsSectionTexts(view: ApprovalView): string[] {
  const head = `*Approval needed* for \`${escapeSlack(view.toolName)}\` with these arguments:\n`;
  const parts = splitForSections(escapeSlack(view.argsJson), SECTION_LIMIT - OPEN.length - CLOSE.length, head.length);
  return parts.map((p, i) => (i === 0 ? head : '') + OPEN + p + CLOSE);
}

/** Cuts at a line break where one is near, never inside an entity (&amp;) or a surrogate pair. */
function splitForSections(text: string, room: number, firstExtra: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > 0) {
    const max = room - (out.length === 0 ? firstExtra : 0);
    if (rest.length <= max) {
      out.push(rest);
      break;
    }
    let cut = max;
    const nl = rest.lastIndexOf('\n', cut);
    if (nl > max / 2) cut = nl;
    else {
      const amp = rest.lastIndexOf('&', cut);
      if (amp > cut - 6 && rest.indexOf(';', amp) >= cut) cut = amp;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    }
    out.push(rest.slice(0, cut));
    // A cut at a line break drops that one newline: the code blocks themselves separate the lines.
    rest = rest[cut] === '\n' ? rest.slice(cut + 1) : rest.slice(cut);
  }
  return out.length ? out : [''];
}

function argsSections(view: ApprovalView): types.KnownBlock[] {
  return argsSectionTexts(view).map((text) => ({ type: 'section', text: { type: 'mrkdwn', text } }));
}

function digestLine(view: ApprovalView): string {
  return `arguments sha256 \`${view.argsDigest}\``;
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
    ...argsSections(view),
    ...sourcesBlocks(view),
    { type: 'context', elements: [{ type: 'mrkdwn', text: `Requested by ${mention}. Only they or an admin can decide. ${digestLine(view)}` }] },
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
    ...argsSections(view),
    ...sourcesBlocks(view),
    { type: 'context', elements: [{ type: 'mrkdwn', text: `${resolutionLine(resolution, mention)} · ${digestLine(view)}` }] },
  ];
}

/** The outcome wording is the gateway's, shared by every platform; only the mention is Slack's. */
export function resolutionLine(resolution: ApprovalResolution, mention: (userId: string) => string): string {
  return approvalOutcomeLine(resolution.outcome, resolution.decidedBy ? mention(resolution.decidedBy.userId) : undefined);
}
