import { MessageFlags, type ButtonInteraction, type ChatInputCommandInteraction } from 'discord.js';
import { isPrivateCommand } from '../../src/gateway/commands.js';
import type { CommandReply, GatewayApi } from '../../src/basics/ports.js';
import { approvalAlreadyDecided } from '../../src/gateway/user-messages.js';
import type { Logger } from '../../src/basics/log.js';
import { splitMessage } from './chunk.js';
import { conversationOf, roleIdsOf, speakerOf } from './inbound.js';
import { parseApprovalCustomId } from './render.js';
import { HERMES_COMMAND } from './register-commands.js';
import { parseFeedbackCustomId, parseStopCustomId } from './answer-buttons.js';

/**
 * Buttons and `/hermes`. Discord wants an answer to every interaction within 3 s. What a click or a
 * task asks for is written durably before Discord is told we received it (a crash after the
 * acknowledgement must not lose it), and that write takes milliseconds; a command that only reads
 * or answers (`/hermes status`) is deferred first. An interaction token lives 15 minutes; a private
 * reply due later goes to the user's DMs instead (a task's answer is a channel message anyway).
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
  /** Posts a task's public echo into the channel (a plain message); resolves with its id. */
  postEcho(channelId: string, content: string): Promise<string>;
  /** Removes that echo again (the task was refused). */
  deleteEcho(channelId: string, messageId: string): Promise<void>;
  /** How long the echo may take before the task is accepted without it (default 1.5 s of the 3 s). */
  echoWaitMs?: number;
}

const ECHO_WAIT_MS = 1500;

export async function handleButton(interaction: ButtonInteraction, deps: InteractionDeps): Promise<void> {
  const stop = parseStopCustomId(interaction.customId);
  const vote = parseFeedbackCustomId(interaction.customId);
  if (stop || vote) return handleAnswerButton(interaction, deps, stop, vote);
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

/**
 * Stop and feedback. Acknowledged at once (the stop itself shows on the answer, which the turn
 * edits when it ends); a refusal and a recorded vote are told to the clicker alone.
 */
async function handleAnswerButton(
  interaction: ButtonInteraction,
  deps: InteractionDeps,
  stop: { turnId: string; requesterId: string } | undefined,
  vote: ReturnType<typeof parseFeedbackCustomId>,
): Promise<void> {
  await interaction.deferUpdate();
  const channel = interaction.channel;
  const conversation = conversationOf(interaction.channelId, interaction.guildId, channel?.isThread() ?? false, channel?.isThread() ? channel.parentId : null);
  const who = speakerOf(interaction.user, interaction.guildId, undefined);
  const roles = roleIdsOf(interaction.member);
  let privateText: string | undefined;
  try {
    if (stop && deps.gateway.stopTurn) {
      const result = await deps.gateway.stopTurn({ ...stop, conversation, by: who, ...(roles && { roles }) });
      if (result.kind !== 'stopped') privateText = result.text;
    } else if (vote && deps.gateway.recordFeedback) {
      const result = await deps.gateway.recordFeedback({ ...vote, voter: who, conversation, ...(roles && { roles }) });
      if (result.kind !== 'same') privateText = result.text;
    }
  } catch (err) {
    deps.log.error({ err: String(err) }, 'discord: answer button failed');
    privateText = USER_TEXT.commandFailed;
  }
  if (privateText !== undefined) await interaction.followUp({ content: privateText, flags: MessageFlags.Ephemeral, allowedMentions: NO_PINGS });
}

export async function handleSlashCommand(interaction: ChatInputCommandInteraction, deps: InteractionDeps): Promise<void> {
  if (interaction.commandName !== HERMES_COMMAND.name) return;
  const text = (interaction.options.getString('text') ?? '').trim();
  const channel = interaction.channel;
  const isThread = channel?.isThread() ?? false;
  const channelId = interaction.channelId ?? '';
  const conversation = conversationOf(channelId, interaction.guildId, isThread, channel?.isThread() ? channel.parentId : null);
  const roles = roleIdsOf(interaction.member);
  const speaker = speakerOf(interaction.user, interaction.guildId, undefined);
  const invocation = { conversation, speaker, text, id: interaction.id, ...(roles && { roles }) };

  // Visibility is fixed by the first response; a command is answered privately, a task publicly.
  if (isPrivateCommand(text)) {
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    const reply = await runCommand(deps, invocation);
    await answerPrivately(interaction, deps, reply.text, 'edit');
    return;
  }

  // A task: its public echo first (the answer replies to it, so the channel sees question and
  // answer together), then the task is written to the inbox, and only then is Discord answered.
  const echoId = await postEchoWithin(deps, channelId, USER_TEXT.taskEcho(interaction.user.id, text));
  const reply = await runCommand(deps, { ...invocation, ...(echoId !== undefined && { replyTo: echoId }) });
  if (reply.kind === 'task') {
    // The person sees privately that it was taken; everyone sees the echo and, later, the answer.
    await interaction.reply({ content: reply.text, flags: MessageFlags.Ephemeral, allowedMentions: NO_PINGS }).catch((err: unknown) => deps.log.warn({ err: String(err) }, 'discord: could not acknowledge /hermes (the task is accepted and runs)'));
    return;
  }
  // Refused (not allowed, a limit): the task will not run, so its public echo must not stay.
  if (echoId !== undefined) await deps.deleteEcho(channelId, echoId).catch((err: unknown) => deps.log.warn({ err: String(err) }, 'discord: could not remove the echo of a refused task'));
  await answerPrivately(interaction, deps, reply.text, 'reply');
}

async function runCommand(deps: InteractionDeps, invocation: Parameters<GatewayApi['handleCommand']>[0]): Promise<CommandReply> {
  try {
    return await deps.gateway.handleCommand(invocation);
  } catch (err) {
    deps.log.error({ err: String(err) }, 'discord: /hermes failed');
    return { kind: 'private', text: USER_TEXT.commandFailed };
  }
}

/** The echo's message id, or undefined when it failed or is slow (the task then runs without it). */
async function postEchoWithin(deps: InteractionDeps, channelId: string, content: string): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), deps.echoWaitMs ?? ECHO_WAIT_MS);
  });
  const posted = deps.postEcho(channelId, content).catch((err: unknown) => {
    deps.log.warn({ err: String(err) }, 'discord: could not show the /hermes task echo');
    return undefined;
  });
  try {
    return await Promise.race([posted, gaveUp]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A private answer: into the deferred reply ('edit') or as the first response ('reply'), the rest
 * as ephemeral follow-ups; past the token's life, or when Discord no longer takes the response,
 * into the user's DMs, so it stays private.
 */
async function answerPrivately(interaction: ChatInputCommandInteraction, deps: InteractionDeps, text: string, how: 'edit' | 'reply'): Promise<void> {
  const parts = splitMessage(text);
  const now = deps.now ?? Date.now;
  const toDms = async () => {
    for (const part of parts) await interaction.user.send({ content: part, allowedMentions: NO_PINGS });
  };
  if (interactionTokenExpired(interaction.createdTimestamp, now())) return toDms();
  const [first = '(no answer)', ...rest] = parts;
  try {
    if (how === 'edit') await interaction.editReply({ content: first, allowedMentions: NO_PINGS });
    else await interaction.reply({ content: first, flags: MessageFlags.Ephemeral, allowedMentions: NO_PINGS });
  } catch (err) {
    deps.log.warn({ err: String(err) }, 'discord: could not answer /hermes in place; sending it by DM');
    return toDms();
  }
  for (const part of rest) {
    await interaction.followUp({ content: part, flags: MessageFlags.Ephemeral, allowedMentions: NO_PINGS });
  }
}
