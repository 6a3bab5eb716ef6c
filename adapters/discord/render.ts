import {
  ButtonStyle,
  ComponentType,
  MessageFlags,
  type APIActionRowComponent,
  type APIAllowedMentions,
  type APIButtonComponent,
  type RESTPatchAPIChannelMessageJSONBody,
  type RESTPostAPIChannelMessageJSONBody,
} from 'discord-api-types/v10';
import type { ApprovalResolution, ApprovalView } from '../../src/gateway/ports.js';
import { approvalOutcomeLine, approvalSourcesLine } from '../../src/gateway/user-messages.js';

/**
 * Message bodies the adapter sends, as the REST API takes them. Pure, so the exact wire shape is
 * unit-tested. Every body carries `allowed_mentions` with nothing to parse: text written by a model
 * (or quoted from a user) can contain `@everyone`, `@here`, `<@&role>` or `<@user>`, and none of
 * them may notify anyone. Only the person being replied to is pinged, through the reply itself.
 */

const CUSTOM_ID_PREFIX = 'hermes';
const CUSTOM_ID_LIMIT = 100;
/** Display budget for the arguments block; the stored arguments are never shortened. */
const ARGS_DISPLAY_LIMIT = 1500;

export function allowedMentions(repliedUser: boolean, notify?: string): APIAllowedMentions {
  return { parse: [], users: notify ? [notify] : [], roles: [], replied_user: repliedUser };
}

/**
 * One text part; the first part of an answer references the user's message. `notify` is the one
 * user a reminder may ping (its owner); nobody else, whatever the text says.
 */
export function textMessage(content: string, replyTo?: string, notify?: string): RESTPostAPIChannelMessageJSONBody {
  return {
    content,
    flags: MessageFlags.SuppressEmbeds,
    allowed_mentions: allowedMentions(replyTo !== undefined, notify),
    ...(replyTo !== undefined && { message_reference: { message_id: replyTo, fail_if_not_exists: false } }),
  };
}

export type ButtonAction = 'approve' | 'deny';

export function approvalCustomId(action: ButtonAction, approvalId: string): string {
  const id = `${CUSTOM_ID_PREFIX}:${action}:${approvalId}`;
  if (id.length > CUSTOM_ID_LIMIT) throw new RangeError(`approval id is too long for a Discord button (${id.length} > ${CUSTOM_ID_LIMIT})`);
  return id;
}

/** Reads a button's custom_id back; anything that is not ours gives null. */
export function parseApprovalCustomId(customId: string): { action: ButtonAction; approvalId: string } | null {
  const m = /^hermes:(approve|deny):(.+)$/.exec(customId);
  if (!m) return null;
  return { action: m[1] as ButtonAction, approvalId: m[2]! };
}

export function approvalMessage(view: ApprovalView, replyTo?: string): RESTPostAPIChannelMessageJSONBody {
  const row: APIActionRowComponent<APIButtonComponent> = {
    type: ComponentType.ActionRow,
    components: [
      { type: ComponentType.Button, style: ButtonStyle.Success, label: 'Approve', custom_id: approvalCustomId('approve', view.id) },
      { type: ComponentType.Button, style: ButtonStyle.Danger, label: 'Deny', custom_id: approvalCustomId('deny', view.id) },
    ],
  };
  const expires = `Expires <t:${Math.floor(view.expiresAt / 1000)}:R>.`;
  return { ...textMessage(`${approvalText(view)}\n${expires}`, replyTo), components: [row] };
}

/** The same prompt after a decision: no buttons, and a line saying what happened and who decided. */
export function resolvedApprovalMessage(view: ApprovalView, resolution: ApprovalResolution): RESTPatchAPIChannelMessageJSONBody {
  return {
    content: `${approvalText(view)}\n${outcomeLine(resolution)}`,
    components: [],
    flags: MessageFlags.SuppressEmbeds,
    allowed_mentions: allowedMentions(false),
  };
}

/** The outcome wording is the gateway's, shared by every platform; only the mention is Discord's. */
export function outcomeLine(r: ApprovalResolution): string {
  return approvalOutcomeLine(r.outcome, r.decidedBy ? mention(r.decidedBy.userId) : undefined);
}

export function mention(userId: string): string {
  return `<@${userId}>`;
}

function approvalText(view: ApprovalView): string {
  const args = displayArgs(view.argsJson);
  return [
    ...(view.description ? [view.description.replace(/```/g, '`\u200b``')] : []),
    `🔐 **Approval needed**: ${mention(view.requester.userId)} asked me to run \`${view.toolName}\` with:`,
    '```json',
    args.text,
    '```' + (args.cut > 0 ? `\n_(${args.cut} more characters not shown; the full arguments are used)_` : ''),
    ...(view.sources?.length ? [approvalSourcesLine(view.sources, (s) => `\`${s.replace(/`/g, "'")}\``)] : []),
  ].join('\n');
}

/** Shortens for display only and keeps a stray ``` inside a JSON string from ending the block. */
function displayArgs(json: string): { text: string; cut: number } {
  const safe = json.replace(/```/g, '`\u200b``');
  if (safe.length <= ARGS_DISPLAY_LIMIT) return { text: safe, cut: 0 };
  return { text: `${safe.slice(0, ARGS_DISPLAY_LIMIT)}…`, cut: safe.length - ARGS_DISPLAY_LIMIT };
}
