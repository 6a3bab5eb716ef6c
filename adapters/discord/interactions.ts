import { MessageFlags, type ButtonInteraction, type ChatInputCommandInteraction } from 'discord.js';
import { isPrivateCommand } from '../../src/gateway/commands.js';
import type { CommandReply, GatewayApi } from '../../src/gateway/ports.js';
import { approvalAlreadyDecided } from '../../src/gateway/user-messages.js';
import type { Logger } from '../../src/log.js';
import { splitMessage } from './chunk.js';
import { conversationOf, roleIdsOf, speakerOf } from './inbound.js';
import { parseApprovalCustomId } from './render.js';
import { HERMES_COMMAND } from './register-commands.js';

/**
 * Buttons and `/hermes`. Discord wants an answer to every interaction within 3 s, so each handler
 * acknowledges first (deferUpdate / deferReply) and does the work after. An interaction token
 * lives 15 minutes; a private reply due later goes to the user's DMs instead (a task's answer is a
 * channel message anyway).
 */

export const INTERACTION_TOKEN_MS = 15 * 60_000;
/** Margin for the request itself, so we never race the token's expiry. */
const TOKEN_MARGIN_MS = 30_000;

export function interactionTokenExpired(createdAt: number, now: number): boolean {
  return now - createdAt > INTERACTION_TOKEN_MS - TOKEN_MARGIN_MS;
}

/** Same policy as render.ts, in discord.js's option shape: nothing in our text pings anyone. */
const NO_PINGS = { parse: [], users: [], roles: [] };

export const USER_TEXT = {
  commandFailed: 'Sorry, that command failed on my side. Please try again in a moment.',
  approvalFailed: 'Sorry, I could not record your decision. Please try again in a moment.',
  taskEcho: (userId: string, text: string) => `<@${userId}> asked: ${text.length > 1800 ? `${text.slice(0, 1800)}…` : text}`,
} as const;

export interface InteractionDeps {
  gateway: GatewayApi;
  log: Logger;
  now?: () => number;
}

export async function handleButton(interaction: ButtonInteraction, deps: InteractionDeps): Promise<void> {
  const parsed = parseApprovalCustomId(interaction.customId);
  if (!parsed) {
    // Not one of ours (an old or foreign button): still acknowledged, so the clicker sees no error.
    await interaction.deferUpdate();
    return;
  }
  const decidedBy = speakerOf(interaction.user, interaction.guildId, undefined);
  let privateText: string | undefined;
  // The decision is written (the gateway returns once it is durable) before Discord is told we
  // received the click: a crash after the acknowledgement cannot lose it.
  try {
    const roles = roleIdsOf(interaction.member);
    const result = await deps.gateway.decideApproval({ approvalId: parsed.approvalId, decision: parsed.action, decidedBy, channelId: interaction.channelId, ...(roles && { roles }) });
    // 'applied': the gateway edits the prompt through resolveApproval; nothing to say privately.
    if (result.kind === 'already') privateText = approvalAlreadyDecided(result.outcome);
    else if (result.kind === 'not_allowed' || result.kind === 'unknown') privateText = result.text;
  } catch (err) {
    deps.log.error({ err: String(err), approvalId: parsed.approvalId }, 'discord: approval decision failed');
    privateText = USER_TEXT.approvalFailed;
  }
  await interaction.deferUpdate();
  if (privateText !== undefined) {
    await interaction.followUp({ content: privateText, flags: MessageFlags.Ephemeral, allowedMentions: NO_PINGS });
  }
}

export async function handleSlashCommand(interaction: ChatInputCommandInteraction, deps: InteractionDeps): Promise<void> {
  if (interaction.commandName !== HERMES_COMMAND.name) return;
  const text = (interaction.options.getString('text') ?? '').trim();
  // Visibility is fixed by the first response, which must come before we know the answer.
  const privately = isPrivateCommand(text);
  await interaction.deferReply(privately ? { flags: MessageFlags.Ephemeral } : {});

  const channel = interaction.channel;
  const isThread = channel?.isThread() ?? false;
  const channelId = interaction.channelId ?? '';
  const conversation = conversationOf(channelId, interaction.guildId, isThread, channel?.isThread() ? channel.parentId : null);
  const roles = roleIdsOf(interaction.member);
  const speaker = speakerOf(interaction.user, interaction.guildId, undefined);
  const now = deps.now ?? Date.now;

  let replyTo: string | undefined;
  if (!privately) {
    // The public echo is what the task's answer replies to, so the channel sees question and answer together.
    // If the echo fails the task still runs; its answer is then a plain channel message.
    const echo = await interaction.editReply({ content: USER_TEXT.taskEcho(interaction.user.id, text), allowedMentions: NO_PINGS }).catch((err: unknown) => {
      deps.log.warn({ err: String(err) }, 'discord: could not show the /hermes task echo');
      return undefined;
    });
    replyTo = echo?.id;
  }

  let reply: CommandReply;
  try {
    reply = await deps.gateway.handleCommand({ conversation, speaker, text, ...(replyTo !== undefined && { replyTo }), ...(roles && { roles }) });
  } catch (err) {
    deps.log.error({ err: String(err) }, 'discord: /hermes failed');
    reply = { kind: 'private', text: USER_TEXT.commandFailed };
  }
  // A task's answer arrives through sendText; a private answer goes back to the one who asked.
  if (reply.kind === 'task') return;

  const parts = splitMessage(reply.text);
  if (interactionTokenExpired(interaction.createdTimestamp, now())) {
    // The token is gone; a private answer must stay private, so it goes to the user's DMs.
    for (const part of parts) await interaction.user.send({ content: part, allowedMentions: NO_PINGS });
    return;
  }
  const [first = '(no answer)', ...rest] = parts;
  if (!privately && replyTo !== undefined) {
    // A task that was refused (not allowed, a limit) will not run: its public echo must not stay.
    await interaction.deleteReply().catch((err: unknown) => deps.log.warn({ err: String(err) }, 'discord: could not remove the echo of a refused task'));
  }
  if (privately) await interaction.editReply({ content: first, allowedMentions: NO_PINGS });
  else await interaction.followUp({ content: first, flags: MessageFlags.Ephemeral, allowedMentions: NO_PINGS });
  for (const part of rest) {
    await interaction.followUp({ content: part, flags: MessageFlags.Ephemeral, allowedMentions: NO_PINGS });
  }
}

