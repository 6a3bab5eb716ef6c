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
import type { ApprovalResolution, ApprovalView } from '../../src/basics/ports.js';
import { approvalOutcomeLine, approvalSourcesLine } from '../../src/gateway/user-messages.js';

/**
 * Message bodies the adapter sends, as the REST API takes them. Pure, so the exact wire shape is
 * unit-tested. Every body carries `allowed_mentions` with nothing to parse: text written by a model
 * (or quoted from a user) can contain `@everyone`, `@here`, `<@&role>` or `<@user>`, and none of
 * them may notify anyone. Only the person being replied to is pinged, through the reply itself.
 */

const CUSTOM_ID_PREFIX = 'hermes';
const CUSTOM_ID_LIMIT = 100;
/** Discord's message content limit. */
const CONTENT_LIMIT = 2000;

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

/** A sub-agent status note as its message reads (notes are short; cut to the content limit anyway). */
export function statusText(note: string): string {
  return `⏳ ${note}`.slice(0, CONTENT_LIMIT);
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

function buttonsRow(view: ApprovalView): APIActionRowComponent<APIButtonComponent> {
  return {
    type: ComponentType.ActionRow,
    components: [
      { type: ComponentType.Button, style: ButtonStyle.Success, label: 'Approve', custom_id: approvalCustomId('approve', view.id) },
      { type: ComponentType.Button, style: ButtonStyle.Danger, label: 'Deny', custom_id: approvalCustomId('deny', view.id) },
    ],
  };
}

/**
 * The prompt as the messages to post, in order; the LAST one carries the buttons (and is the one
 * edited after the decision). The arguments are shown in full, never cut: when they do not fit in
 * one message with the rest, they go first, over as many messages as they need (the gateway
 * refuses arguments longer than MAX_SHOWN_ARGS_CHARS before any prompt).
 */
export function approvalMessages(view: ApprovalView, replyTo?: string): RESTPostAPIChannelMessageJSONBody[] {
  const expires = `Expires <t:${Math.floor(view.expiresAt / 1000)}:R>.`;
  const single = `${approvalText(view)}\n${expires}`;
  if (single.length <= CONTENT_LIMIT) return [{ ...textMessage(single, replyTo), components: [buttonsRow(view)] }];
  const parts = argsParts(view);
  return [
    ...parts.map((p, i) => textMessage(p, i === 0 ? replyTo : undefined)),
    { ...textMessage(`${summaryText(view, parts.length)}\n${expires}`), components: [buttonsRow(view)] },
  ];
}

/** The single-message prompt (arguments short enough to share a message with the buttons). */
export function approvalMessage(view: ApprovalView, replyTo?: string): RESTPostAPIChannelMessageJSONBody {
  return approvalMessages(view, replyTo).at(-1)!;
}

/** The same prompt after a decision (its last message): no buttons, and who decided what. */
export function resolvedApprovalMessage(view: ApprovalView, resolution: ApprovalResolution): RESTPatchAPIChannelMessageJSONBody {
  const single = approvalText(view);
  const parts = argsParts(view);
  const text = `${single}\n${outcomeLine(resolution)}`.length <= CONTENT_LIMIT ? single : summaryText(view, parts.length);
  return {
    content: `${text}\n${outcomeLine(resolution)}`,
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

function header(view: ApprovalView): string {
  return `🔐 **Approval needed**: ${mention(view.requester.userId)} asked me to run \`${view.toolName}\``;
}

function digestLine(view: ApprovalView): string {
  return `arguments sha256 \`${view.argsDigest}\``;
}

/** The outside sources the turn read before the request (provenance), if any. */
function sourcesLines(view: ApprovalView): string[] {
  return view.sources?.length ? [approvalSourcesLine(view.sources, (s) => `\`${s.replace(/`/g, "'")}\``)] : [];
}

/** The tool's own words about the call (a schedule's next runs), kept from closing a code block. */
function descriptionLines(view: ApprovalView): string[] {
  return view.description ? [view.description.replace(/```/g, '`\u200b``')] : [];
}

function approvalText(view: ApprovalView): string {
  return [...descriptionLines(view), `${header(view)} with:`, '```json', safeArgs(view.argsJson), '```', digestLine(view), ...sourcesLines(view)].join('\n');
}

function summaryText(view: ApprovalView, parts: number): string {
  return [...descriptionLines(view), `${header(view)} with the arguments shown in full in the ${parts === 1 ? 'message' : `${parts} messages`} above (${digestLine(view)}).`, ...sourcesLines(view)].join('\n');
}

/** Keeps a stray ``` inside a JSON string from ending the block (display only; what runs is the stored record). */
function safeArgs(json: string): string {
  return json.replace(/```/g, '`\u200b``');
}

/** The arguments over as many code-block messages as they need, cut at line breaks where possible. */
function argsParts(view: ApprovalView): string[] {
  const label = (i: number, n: number) => `Arguments for \`${view.toolName}\` (part ${i}/${n}):\n\`\`\`json\n`;
  const room = CONTENT_LIMIT - label(99, 99).length - '\n```'.length;
  const chunks: string[] = [];
  let rest = safeArgs(view.argsJson);
  while (rest.length > 0) {
    let cut = Math.min(rest.length, room);
    if (cut < rest.length) {
      const nl = rest.lastIndexOf('\n', cut);
      if (nl > room / 2) cut = nl + 1;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    }
    chunks.push(rest.slice(0, cut).replace(/\n$/, ''));
    rest = rest.slice(cut);
  }
  return chunks.map((c, i) => `${label(i + 1, chunks.length)}${c}\n\`\`\``);
}
