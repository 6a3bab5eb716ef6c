/**
 * Button clicks and `/hermes`. Both are acknowledged first (Slack shows an error after 3 s), then
 * handed to the gateway.
 *
 * Clicks: the gateway decides (requester or admin only, exactly once). A click that changes
 * nothing — someone else's approval, a second click, an unknown id — is answered with an ephemeral
 * message to the clicker alone; an applied decision is shown by the gateway editing the prompt.
 * Stop and feedback clicks go to the gateway the same way: a refused Stop (someone else's task) and
 * a recorded vote are told to the clicker alone; a stop that worked shows on the answer itself.
 * Commands: the answer to a private subcommand goes to the invoking user through response_url
 * (ephemeral); a task gets the gateway's short acknowledgement the same way, and its result is
 * posted in the channel by the gateway through sendText.
 */
import type { App, BlockAction, BlockButtonAction, SlashCommand } from '@slack/bolt';
import type { webApi } from '@slack/bolt';
import type { GatewayApi } from '../../src/basics/ports.js';
import type { Logger } from '../../src/basics/log.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';
import { APPROVE_ACTION, DENY_ACTION } from './approval-blocks.js';
import { FEEDBACK_ACTION, parseFeedbackValue, parseStopValue, STOP_ACTION } from './answer-buttons.js';
import { REPLAY_MARK } from './durable-app.js';
import { chunkMrkdwn } from './chunk.js';
import { renderMrkdwn } from './render-mrkdwn.js';
import { describeSlackError, honouringRateLimits, SLACK_CALL_TIMEOUT_MS } from './slack-calls.js';

export const USER_TEXT = {
  alreadyDecided: (outcome: string) => `This approval was already decided: ${outcome}.`,
  commandFailed: 'Sorry, that command could not be run right now. Please try again in a moment.',
  clickFailed: 'Sorry, your decision could not be recorded right now. Please click again in a moment.',
} as const;

export interface InteractionDeps {
  gateway: GatewayApi;
  client: webApi.WebClient;
  log: Logger;
  teamId: string;
  fetch?: typeof fetch;
}

export function registerInteractions(app: App, deps: InteractionDeps): void {
  const { log } = deps;
  // One listener for every block action, so a click on anything (an old button, another app's
  // action id) is acknowledged too: an unacknowledged one shows the clicker an error after 3 s.
  app.action<BlockAction>({ type: 'block_actions' }, async ({ ack, body, action }) => {
    await ack();
    if (action.action_id === STOP_ACTION || action.action_id === FEEDBACK_ACTION) {
      const value = 'value' in action && typeof action.value === 'string' ? action.value : undefined;
      const handled = action.action_id === STOP_ACTION ? onStop(deps, body, value) : onFeedback(deps, body, value);
      await handled.catch((err: unknown) => log.error({ err }, 'slack: click handling failed'));
      return;
    }
    if (action.type !== 'button') {
      log.debug({ actionId: action.action_id }, 'slack: acknowledged a click that is not ours');
      return;
    }
    const decision = action.action_id === APPROVE_ACTION ? 'approve' : action.action_id === DENY_ACTION ? 'deny' : undefined;
    if (!decision) {
      log.debug({ actionId: action.action_id }, 'slack: acknowledged a click that is not ours');
      return;
    }
    await onClick(deps, body as BlockButtonAction, action.value ?? '', decision).catch((err: unknown) => log.error({ err }, 'slack: click handling failed'));
  });
  // Shortcuts and modal submissions are not used, but one that arrives still gets its ack.
  app.shortcut(/.*/, async ({ ack }) => ack());
  app.view(/.*/, async ({ ack }) => ack());
  app.command('/hermes', async ({ ack, command }) => {
    await ack();
    await onCommand(deps, command).catch((err: unknown) => log.error({ err }, 'slack: /hermes handling failed'));
  });
}

async function onClick(deps: InteractionDeps, body: BlockButtonAction, approvalId: string, decision: 'approve' | 'deny'): Promise<void> {
  const decidedBy: Speaker = { platform: 'slack', workspaceId: deps.teamId, userId: body.user.id, displayName: body.user.name };
  const channelId = body.channel?.id ?? body.container.channel_id ?? '';
  let text: string | undefined;
  try {
    const result = await deps.gateway.decideApproval({ approvalId, decision, decidedBy, channelId });
    if (result.kind === 'not_allowed' || result.kind === 'unknown') text = result.text;
    // A replay after a restart finds its own decision already applied: nothing to tell the clicker.
    else if (result.kind === 'already' && !(REPLAY_MARK in body)) text = USER_TEXT.alreadyDecided(result.outcome);
  } catch (err) {
    deps.log.error({ err, approvalId }, 'slack: decideApproval failed');
    text = USER_TEXT.clickFailed;
  }
  const channel = body.channel?.id ?? body.container.channel_id;
  if (text === undefined || !channel) return;
  const threadTs = body.message?.thread_ts ?? body.container.thread_ts;
  await honouringRateLimits(() =>
    deps.client.chat.postEphemeral({ channel, user: body.user.id, text: renderMrkdwn(text), thread_ts: threadTs }),
  ).catch((err: unknown) => deps.log.warn({ err: describeSlackError(err) }, 'slack: could not send the ephemeral click answer'));
}

/** The conversation a click on an answer's button happened in (the answer's thread, if it has one). */
function clickConversation(deps: InteractionDeps, body: BlockAction): Conversation | undefined {
  const channelId = body.channel?.id ?? body.container.channel_id;
  if (!channelId) return undefined;
  const threadTs = (body.message?.thread_ts as string | undefined) ?? body.container.thread_ts;
  return { platform: 'slack', workspaceId: deps.teamId, channelId, ...(threadTs && { threadId: threadTs }), isDm: channelId.startsWith('D') };
}

async function tellClicker(deps: InteractionDeps, body: BlockAction, text: string): Promise<void> {
  const channel = body.channel?.id ?? body.container.channel_id;
  if (!channel) return;
  const threadTs = (body.message?.thread_ts as string | undefined) ?? body.container.thread_ts;
  await honouringRateLimits(() => deps.client.chat.postEphemeral({ channel, user: body.user.id, text: renderMrkdwn(text), thread_ts: threadTs })).catch((err: unknown) =>
    deps.log.warn({ err: describeSlackError(err) }, 'slack: could not send the ephemeral click answer'),
  );
}

async function onStop(deps: InteractionDeps, body: BlockAction, value: string | undefined): Promise<void> {
  const parsed = parseStopValue(value);
  const conversation = clickConversation(deps, body);
  if (!parsed || !conversation || !deps.gateway.stopTurn) return;
  const by: Speaker = { platform: 'slack', workspaceId: deps.teamId, userId: body.user.id, displayName: body.user.name ?? body.user.username };
  const result = await deps.gateway.stopTurn({ turnId: parsed.turnId, requesterId: parsed.requesterId, conversation, by });
  if (result.kind !== 'stopped') await tellClicker(deps, body, result.text);
}

async function onFeedback(deps: InteractionDeps, body: BlockAction, value: string | undefined): Promise<void> {
  const parsed = parseFeedbackValue(value);
  const conversation = clickConversation(deps, body);
  if (!parsed || !conversation || !deps.gateway.recordFeedback) return;
  const voter: Speaker = { platform: 'slack', workspaceId: deps.teamId, userId: body.user.id, displayName: body.user.name ?? body.user.username };
  const result = await deps.gateway.recordFeedback({ turnId: parsed.turnId, vote: parsed.vote, voter, conversation });
  if (result.kind !== 'same') await tellClicker(deps, body, result.text);
}

async function onCommand(deps: InteractionDeps, command: SlashCommand): Promise<void> {
  const conversation: Conversation = {
    platform: 'slack',
    workspaceId: deps.teamId,
    channelId: command.channel_id,
    isDm: command.channel_id.startsWith('D'),
  };
  const speaker: Speaker = { platform: 'slack', workspaceId: deps.teamId, userId: command.user_id, displayName: command.user_name };
  let text: string;
  try {
    const reply = await deps.gateway.handleCommand({ conversation, speaker, text: command.text.trim(), id: command.trigger_id });
    text = reply.text;
  } catch (err) {
    deps.log.error({ err }, 'slack: handleCommand failed');
    text = USER_TEXT.commandFailed;
  }
  for (const part of chunkMrkdwn(renderMrkdwn(text))) {
    await respondEphemeral(deps, command.response_url, part);
  }
}

/** POSTs to the command's response_url (valid for 30 min, 5 uses) with a timeout. */
async function respondEphemeral(deps: InteractionDeps, responseUrl: string, text: string): Promise<void> {
  const doFetch = deps.fetch ?? fetch;
  try {
    const res = await doFetch(responseUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ response_type: 'ephemeral', text }),
      signal: AbortSignal.timeout(SLACK_CALL_TIMEOUT_MS),
    });
    if (!res.ok) deps.log.warn({ status: res.status }, 'slack: response_url refused the command answer');
  } catch (err) {
    deps.log.warn({ err: describeSlackError(err) }, 'slack: could not answer the command through response_url');
  }
}
