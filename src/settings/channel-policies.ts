import * as z from 'zod';
import { BUSY_MODES, type BusyMode } from './busy-mode.js';

/**
 * The `channels:` section of hermes.config.yaml (docs/access-and-limits.md): what the bot may do in
 * one place. Keys name where a policy applies; the most specific one that matches a conversation
 * wins, and its fields merge over the less specific ones (default → dm → Discord guild → the
 * channel itself). Pure: parsing, merging and matching only.
 *
 *   default                     everywhere
 *   dm                          every direct message (both platforms)
 *   slack:<channel id>          one Slack channel, group or DM (C…, G…, D…)
 *   discord:guild:<id>          every channel of one Discord server
 *   discord:channel:<id>        one Discord channel (and its threads), or a DM channel
 *
 * Merging: a field given in a more specific policy replaces the less specific one's, except
 * `instructions`, which are added after the earlier ones (a channel adds to the house rules,
 * it does not drop them). Inside `tools`, `allow` and `deny` are fields of their own: a channel
 * that gives only `deny` keeps the default's `allow`; `deny: []` clears an inherited deny list.
 */

const POLICY_KEY = /^(?:default|dm|slack:[CGD][A-Z0-9]{2,}|discord:(?:guild|channel):\d{15,21})$/;
export const POLICY_KEY_FIX = 'use default, dm, slack:<channel id> (C…), discord:guild:<server id> or discord:channel:<channel id>';

/** A person entry, as HERMES_ALLOW writes users (and Discord roles). */
const PERSON = /^(?:slack:[UW][A-Z0-9]+|discord:(?:role:)?\d{15,21})$/;
const PERSON_FIX = 'use slack:U0123ABC, discord:123456789012345678 or discord:role:<role id>';
const ROLE = /^(?:discord:role:)?\d{15,21}$/;

/** A tool name or a `*` glob over names; skills are named `skill:<name>`. */
const pattern = z.string().min(1).max(200).regex(/^[A-Za-z0-9_*:.-]+$/, { error: 'tool patterns use letters, digits, _ - . : and * (e.g. fetch_url, mcp__github__*, skill:pdf-*)' });
const patterns = z.array(pattern).max(200);

const policySchema = z
  .object({
    tools: z.object({ allow: patterns.optional(), deny: patterns.optional() }).strict().optional(),
    instructions: z.string().trim().min(1).max(8000).optional(),
    model: z.string().trim().min(1).max(200).optional(),
    users: z.array(z.string().regex(PERSON, { error: `is not a person: ${PERSON_FIX}` })).max(1000).optional(),
    roles: z
      .array(
        z
          // Unquoted in YAML, a role id is a number (and past 2^53 a different one): say to quote it.
          .string({ error: 'is not text: quote a role id in YAML ("123456789012345678"), unquoted it is read as a number and loses digits' })
          .regex(ROLE, { error: 'is not a Discord role: use the role id (digits) or discord:role:<id>' }),
      )
      .max(1000)
      .optional(),
    approvers: z.array(z.string().regex(PERSON, { error: `is not a person: ${PERSON_FIX}` })).max(1000).optional(),
    busy_mode: z.enum(BUSY_MODES).optional(),
    daily_tokens: z.number().int().min(0).optional(),
    respond: z.enum(['mention', 'all']).optional(),
  })
  .strict();

export type PolicyFields = z.infer<typeof policySchema>;

export const channelsFileSchema = z.record(z.string().regex(POLICY_KEY, { error: `is not a policy key: ${POLICY_KEY_FIX}` }), policySchema);
export type ChannelsFile = z.infer<typeof channelsFileSchema>;

/** The policy in force in one place, every field resolved. */
export interface ChannelPolicy {
  /** The keys that applied, least specific first (`default` is listed only when configured). */
  sources: string[];
  tools: { allow?: string[]; deny?: string[] };
  /** Every applying policy's instructions, least specific first. */
  instructions: string[];
  model?: string;
  /** Absent: everyone HERMES_ALLOW lets in. */
  users?: string[];
  roles?: string[];
  approvers: string[];
  busyMode?: BusyMode;
  /**
   * 0 = no channel budget. Counted per channel (a thread counts in its channel) whichever key set
   * it: `daily_tokens` on `default` or a guild gives each channel there an allowance of that size.
   */
  dailyTokens: number;
  respond: 'mention' | 'all';
}

/** Where a policy is looked up: what the verified event says. */
export interface PolicyPlace {
  platform: string;
  /** Slack team / Discord guild id ("@dm" for Discord DMs). */
  workspaceId: string;
  channelId: string;
  /** A thread's parent channel where threads have their own id (Discord). */
  parentChannelId?: string;
  isDm: boolean;
}

/** The keys that can apply to a place, least specific first. */
export function policyKeys(p: PolicyPlace): string[] {
  const keys = ['default'];
  if (p.isDm) keys.push('dm');
  if (p.platform === 'slack') keys.push(`slack:${p.channelId}`);
  if (p.platform === 'discord') {
    if (!p.isDm && p.workspaceId !== '@dm') keys.push(`discord:guild:${p.workspaceId}`);
    if (p.parentChannelId) keys.push(`discord:channel:${p.parentChannelId}`);
    keys.push(`discord:channel:${p.channelId}`);
  }
  return keys;
}

export function resolvePolicy(file: ChannelsFile | undefined, place: PolicyPlace): ChannelPolicy {
  const out: ChannelPolicy = { sources: [], tools: {}, instructions: [], approvers: [], dailyTokens: 0, respond: 'mention' };
  for (const key of policyKeys(place)) {
    const p = file?.[key];
    if (!p) continue;
    out.sources.push(key);
    if (p.tools?.allow !== undefined) out.tools = { ...out.tools, allow: p.tools.allow };
    if (p.tools?.deny !== undefined) out.tools = { ...out.tools, deny: p.tools.deny };
    if (p.instructions !== undefined) out.instructions.push(p.instructions);
    if (p.model !== undefined) out.model = p.model;
    if (p.users !== undefined) out.users = p.users;
    if (p.roles !== undefined) out.roles = p.roles;
    if (p.approvers !== undefined) out.approvers = p.approvers;
    if (p.busy_mode !== undefined) out.busyMode = p.busy_mode;
    if (p.daily_tokens !== undefined) out.dailyTokens = p.daily_tokens;
    if (p.respond !== undefined) out.respond = p.respond;
  }
  return out;
}

/** `*` matches any run of characters (including none); everything else is literal; case-sensitive. */
export function globMatch(glob: string, name: string): boolean {
  const parts = glob.split('*');
  if (parts.length === 1) return glob === name;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) return false;
  let at = first.length;
  const end = name.length - last.length;
  for (const mid of parts.slice(1, -1)) {
    if (mid === '') continue;
    const found = name.indexOf(mid, at);
    if (found < 0 || found + mid.length > end) return false;
    at = found + mid.length;
  }
  return true;
}

const SKILL_PREFIX = 'skill:';

/**
 * Whether a tool may be offered and called under these rules. Deny wins over allow; with an allow
 * list only what it matches is offered. Skills (`skill:<name>`) are checked by `skillAllowed`.
 */
export function toolAllowed(rules: ChannelPolicy['tools'], name: string): boolean {
  if (rules.deny?.some((g) => globMatch(g, name))) return false;
  if (rules.allow === undefined) return true;
  return rules.allow.some((g) => globMatch(g, name));
}

/**
 * Whether a skill may be used: `skill:<name>` denied → no; an allow list that names skills
 * (`skill:…` entries) must match it; an allow list of tools only says nothing about skills (the
 * `use_skill` tool itself is allowed or not like any tool).
 */
export function skillAllowed(rules: ChannelPolicy['tools'], skill: string): boolean {
  const name = `${SKILL_PREFIX}${skill}`;
  if (rules.deny?.some((g) => globMatch(g, name))) return false;
  const skillAllows = rules.allow?.filter((g) => g.startsWith(SKILL_PREFIX) || g === '*');
  if (!skillAllows || skillAllows.length === 0) return true;
  return skillAllows.some((g) => globMatch(g, name));
}

/** Whether a person (or one of their roles) is named in a list of person entries. */
export function personListed(list: readonly string[], platform: string, userId: string, roles: readonly string[] | undefined): boolean {
  return list.some((entry) => {
    if (entry === `${platform}:${userId}`) return true;
    const role = /^discord:role:(\d+)$/.exec(entry)?.[1];
    return platform === 'discord' && role !== undefined && (roles?.includes(role) ?? false);
  });
}

/** Whether the policy's `users`/`roles` let this person in (no lists: everyone). */
export function policyAdmits(policy: Pick<ChannelPolicy, 'users' | 'roles'>, platform: string, userId: string, roles: readonly string[] | undefined): boolean {
  if (policy.users === undefined && policy.roles === undefined) return true;
  if (personListed(policy.users ?? [], platform, userId, roles)) return true;
  const roleIds = (policy.roles ?? []).map((r) => r.replace(/^discord:role:/, ''));
  return platform === 'discord' && roleIds.some((r) => roles?.includes(r));
}
