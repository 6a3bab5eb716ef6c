/**
 * The token and scope check at start. A bot that lacks `chat:write` or `app_mentions:read` is
 * otherwise discovered as "it never answers"; here it is one line with the exact fix.
 *
 * Scopes come from auth.test's `x-oauth-scopes` header (the WebClient exposes it as
 * `response_metadata.scopes`). Scopes without which the bot cannot work stop the start; the rest
 * only degrade a feature and are logged as warnings. Event subscriptions cannot be read through
 * the API, so the log names them once as a reminder.
 */
import type { webApi } from '@slack/bolt';
import { describeSlackError } from './slack-calls.js';

export interface BotIdentity {
  botUserId: string;
  botId: string;
  teamId: string;
  /** undefined when Slack did not send the scope header (then nothing is checked). */
  scopes?: string[];
}

const REQUIRED: Record<string, string> = {
  'chat:write': 'post answers',
  'app_mentions:read': 'receive @mentions in channels',
};

const RECOMMENDED: Record<string, string> = {
  'im:history': 'receive direct messages or read their history',
  'channels:history': 'follow up in threads, or read a thread\'s earlier messages and channel history, in public channels',
  'groups:history': 'follow up in threads, or read a thread\'s earlier messages and channel history, in private channels',
  'mpim:history': 'read the history of group DMs',
  'reactions:write': 'show the working reaction',
  'users:read': 'show people\'s names to the model (in requests, thread context and channel history)',
  commands: 'use /hermes',
  'files:read': 'read files people attach',
  'files:write': 'send files (send_file)',
  'assistant:write': 'offer suggested prompts, show its working status and title threads in its assistant pane (the rest works without it)',
};

export const EVENTS_REMINDER =
  'Slack app must subscribe to bot events app_mention, message.im, message.channels and message.groups, and for its assistant pane assistant_thread_started and assistant_thread_context_changed (Event Subscriptions), or create it from adapters/slack/manifest.yaml.';

export class SlackStartupError extends Error {
  override name = 'SlackStartupError';
}

function fix(scope: string): string {
  return `add the bot scope ${scope} under OAuth & Permissions → Scopes (or create the app from adapters/slack/manifest.yaml), then reinstall the app to the workspace`;
}

export function checkScopes(scopes: string[] | undefined): { errors: string[]; warnings: string[] } {
  if (scopes === undefined) return { errors: [], warnings: ['Slack did not report the token\'s scopes (no x-oauth-scopes header); skipping the scope check.'] };
  const have = new Set(scopes);
  const errors = Object.entries(REQUIRED)
    .filter(([s]) => !have.has(s))
    .map(([s, why]) => `SLACK_BOT_TOKEN lacks the ${s} scope, needed to ${why}: ${fix(s)}.`);
  const warnings = Object.entries(RECOMMENDED)
    .filter(([s]) => !have.has(s))
    .map(([s, why]) => `SLACK_BOT_TOKEN lacks the ${s} scope, so the bot cannot ${why}: ${fix(s)}.`);
  return { errors, warnings };
}

/** Calls auth.test; throws SlackStartupError with the fix when the token is unusable. */
export async function identifyBot(client: webApi.WebClient): Promise<BotIdentity> {
  let res: webApi.AuthTestResponse;
  try {
    res = await client.auth.test();
  } catch (err) {
    const code = (err as { data?: { error?: string } }).data?.error;
    if (code === 'invalid_auth' || code === 'not_authed' || code === 'account_inactive' || code === 'token_revoked') {
      throw new SlackStartupError(`SLACK_BOT_TOKEN was rejected by Slack (${code}): copy the current Bot User OAuth Token (xoxb-…) from OAuth & Permissions, and reinstall the app if it was revoked.`);
    }
    throw new SlackStartupError(`Could not reach Slack to check SLACK_BOT_TOKEN (${describeSlackError(err)}): check network access to the Slack API, and SLACK_API_URL if you set it.`);
  }
  if (!res.user_id || !res.team_id) {
    throw new SlackStartupError('SLACK_BOT_TOKEN is not a bot token (auth.test returned no bot user): use the Bot User OAuth Token (xoxb-…).');
  }
  return { botUserId: res.user_id, botId: res.bot_id ?? '', teamId: res.team_id, scopes: res.response_metadata?.scopes };
}
