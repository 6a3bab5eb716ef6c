/**
 * Slack message text → what the model reads. Pure.
 *
 * The bot's own mention is removed (it is how the user addressed us, not content). Other user
 * mentions become `@Name (<@U…>)`: the name is what the model can reason about, the raw token is
 * what it must echo back to mention that person. Channels, links and broadcasts become plain
 * readable text, and Slack's entity escaping is undone last so `&lt;` reaches the model as `<`.
 */

export type NameLookup = (userId: string) => string | undefined;

export function cleanInboundText(text: string, botUserId: string, nameOf: NameLookup): string {
  return text
    .replace(mentionPattern(botUserId), '')
    .replace(/<@([UW][A-Z0-9]+)(?:\|([^>]*))?>/g, (_m, id: string, label: string | undefined) => {
      const name = nameOf(id) ?? label;
      return name ? `@${name} (<@${id}>)` : `<@${id}>`;
    })
    .replace(/<#([CG][A-Z0-9]+)(?:\|([^>]*))?>/g, (_m, id: string, name: string | undefined) => (name ? `#${name}` : `<#${id}>`))
    .replace(/<!subteam\^[A-Z0-9]+(?:\|([^>]*))?>/g, (_m, handle: string | undefined) => handle ?? '@group')
    .replace(/<!(here|channel|everyone)(?:\|[^>]*)?>/g, '@$1')
    .replace(/<!date\^[^|>]*\|([^>]*)>/g, '$1')
    .replace(/<((?:https?|mailto):[^|>]+)\|([^>]+)>/g, (_m, url: string, label: string) => (label === url ? url : `${label} (${url})`))
    .replace(/<((?:https?|mailto):[^>]+)>/g, '$1')
    .replace(/[ \t]{2,}/g, ' ')
    .trim()
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** User ids mentioned in the text (other than the bot), so names can be fetched before cleaning. */
export function mentionedUserIds(text: string, botUserId: string): string[] {
  const ids = new Set<string>();
  for (const m of text.matchAll(/<@([UW][A-Z0-9]+)(?:\|[^>]*)?>/g)) if (m[1] !== botUserId) ids.add(m[1]!);
  return [...ids];
}

export function mentionsUser(text: string, userId: string): boolean {
  const re = mentionPattern(userId);
  re.lastIndex = 0;
  return re.test(text);
}

/**
 * One user's mention, `<@U…>` or `<@U…|label>` (global). Built once for the id it was last asked
 * for (the bot's own, on every delivery): building it per event showed in the bot's profile.
 */
let lastPattern: { userId: string; re: RegExp } | undefined;
function mentionPattern(userId: string): RegExp {
  if (lastPattern?.userId !== userId) lastPattern = { userId, re: new RegExp(`<@${escapeRegExp(userId)}(?:\\|[^>]*)?>`, 'g') };
  return lastPattern.re;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
