import type { ChannelPolicy } from '../settings/channel-policies.js';
import type { DailyUsage } from '../state/usage/usage-meter.js';

/**
 * `/hermes policy`: the channel policy in force where it is asked, in words a person can check
 * against what the bot does. Private (ephemeral) wherever it is asked, since it names people.
 */
export interface PolicyView {
  policy: ChannelPolicy;
  /** The tools the model is offered here for the asker right now. */
  offered: string[];
  /** The registered tools the policy withholds here. */
  withheld: string[];
  /** The channel's budget today, when it has one. */
  channelUsage?: DailyUsage;
  /** HERMES_DAILY_TOKENS today, when set. */
  botUsage?: DailyUsage;
  /** The busy mode in force here (the policy's, else HERMES_BUSY_MODE). */
  busyMode: string;
  /** The model used here. */
  model: string;
}

const n = (x: number) => x.toLocaleString('en-US');
const list = (xs: readonly string[], max = 30) => (xs.length > max ? `${xs.slice(0, max).join(', ')} and ${xs.length - max} more` : xs.join(', '));

export function policyText(v: PolicyView): string {
  const p = v.policy;
  const lines = [p.sources.length ? `Policy in force here: ${p.sources.map((s) => `\`${s}\``).join(' → ')} (hermes.config.yaml \`channels:\`).` : 'No channel policy applies here: the bot-wide settings hold.'];
  const rules = [p.tools.allow ? `allow ${p.tools.allow.map((g) => `\`${g}\``).join(', ')}` : '', p.tools.deny ? `deny ${p.tools.deny.map((g) => `\`${g}\``).join(', ')}` : ''].filter(Boolean);
  lines.push(`• Tools: ${rules.length ? `${rules.join('; ')} (deny wins)` : 'no tool rules'}.`);
  lines.push(`• Offered to me here now: ${v.offered.length ? list(v.offered) : 'none'}.`);
  if (v.withheld.length) lines.push(`• Withheld by this policy: ${list(v.withheld)}.`);
  lines.push(`• Who may use me here: ${p.users || p.roles ? list([...(p.users ?? []), ...(p.roles ?? []).map((r) => (r.startsWith('discord:role:') ? r : `discord:role:${r}`))]) : 'everyone the bot-wide access rules (HERMES_ALLOW) let in'}.`);
  lines.push(`• Who may decide approvals: the requester, admins${p.approvers.length ? `, and ${list(p.approvers)}` : ''}.`);
  lines.push(`• I answer: ${p.respond === 'all' ? 'every message in this channel, no mention needed' : 'when mentioned (and in threads I am part of)'}.`);
  lines.push(`• Messages while I work: ${v.busyMode}.`);
  lines.push(`• Model: ${v.model}.`);
  if (v.channelUsage) lines.push(`• This channel's budget today: ${n(v.channelUsage.used)} of ${n(v.channelUsage.limit)} tokens (daily_tokens).`);
  if (v.botUsage) lines.push(`• The bot's budget today: ${n(v.botUsage.used)} of ${n(v.botUsage.limit)} tokens (HERMES_DAILY_TOKENS).`);
  if (p.instructions.length) lines.push(`• Extra instructions here: ${p.instructions.map((i) => `“${i.length > 200 ? `${i.slice(0, 199)}…` : i}”`).join(' then ')}.`);
  return lines.join('\n');
}
