/**
 * HERMES_ALLOW: who may talk to the bot. Entries name a user, a channel (everyone in it) or a
 * Discord role. Pure: parsing and matching only; where roles come from is the caller's business.
 *
 *   slack:U0123ABC            a Slack user (W… for Enterprise Grid users)
 *   slack:C0123ABC            everyone in a Slack channel (G… for older private channels)
 *   discord:123456789012345678          a Discord user
 *   discord:channel:123456789012345678  everyone in a Discord channel (and its threads)
 *   discord:role:123456789012345678     every member holding that role
 *
 * Ids are checked for shape only: a listed person who has not joined yet is not an error.
 */

export type AllowRule =
  | { kind: 'user'; platform: 'slack' | 'discord'; id: string }
  | { kind: 'channel'; platform: 'slack' | 'discord'; id: string }
  | { kind: 'role'; platform: 'discord'; id: string };

export type ParsedAllowList = { ok: true; rules: AllowRule[] } | { ok: false; errors: string[] };

const EXAMPLES = 'slack:U0123ABC, slack:C0123ABC, discord:123456789012345678, discord:channel:<id> or discord:role:<id>';

/** One well-formed entry (ids checked for shape only). */
export const ALLOW_ENTRY = /^(?:slack:[UWCG][A-Z0-9]+|discord:(?:(?:channel|role):)?\d{15,21})$/;
/** What a malformed entry's error line says after `HERMES_ALLOW entry "…" is not valid: `. */
export const ALLOW_ENTRY_FIX = `use ${EXAMPLES} (Slack ids in capitals, Discord ids as digits).`;

/** An entry that matches ALLOW_ENTRY as its rule. */
export function toAllowRule(entry: string): AllowRule {
  const [platform, kindOrId, maybeId] = entry.split(':') as [string, string, string | undefined];
  if (platform === 'slack') return { kind: /^[UW]/.test(kindOrId) ? 'user' : 'channel', platform: 'slack', id: kindOrId };
  if (kindOrId === 'channel') return { kind: 'channel', platform: 'discord', id: maybeId! };
  if (kindOrId === 'role') return { kind: 'role', platform: 'discord', id: maybeId! };
  return { kind: 'user', platform: 'discord', id: kindOrId };
}

/** Comma list → rules; every malformed entry is named in its own error line (config does the same through zod). */
export function parseAllowList(raw: string | undefined): ParsedAllowList {
  const entries = (raw ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const bad = entries.filter((e) => !ALLOW_ENTRY.test(e));
  if (bad.length) return { ok: false, errors: bad.map((e) => `HERMES_ALLOW entry ${JSON.stringify(e)} is not valid: ${ALLOW_ENTRY_FIX}`) };
  return { ok: true, rules: entries.map(toAllowRule) };
}

/** What a verified platform event says about where and who: the inputs of an allow decision. */
export interface AllowSubject {
  platform: string;
  userId: string;
  /** Channels the message counts as written in: the channel, and a thread's parent when the platform gives threads their own id. */
  channelIds: string[];
  /** Discord role ids of the speaker in that guild (undefined: not known). */
  roles?: readonly string[];
}

/** Which rule lets the subject in, if any. */
export function matchRule(rules: readonly AllowRule[], s: AllowSubject): AllowRule | undefined {
  return rules.find((r) => {
    if (r.platform !== s.platform) return false;
    if (r.kind === 'user') return r.id === s.userId;
    if (r.kind === 'channel') return s.channelIds.includes(r.id);
    return s.roles?.includes(r.id) ?? false;
  });
}
