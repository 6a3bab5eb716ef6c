/**
 * Markdown from the model → Slack mrkdwn. Pure.
 *
 * Safety comes first, formatting second: everything the model writes is entity-escaped (`&`, `<`,
 * `>`), so `<!channel>`, `<!here>`, `<!everyone>` and `<!subteam^…>` arrive as visible text and
 * never notify anyone. Slack decodes those three entities everywhere, code included, so escaping
 * inside code changes nothing the reader sees while keeping `<…>` from being parsed there too.
 * The only control sequences that survive are the ones we build (links) and plain user/channel
 * mentions (`<@U…>`, `<#C…>`), which ping one person at most and let the model address people.
 * Literal `@channel` / `@here` / `@everyone` get a zero-width joiner so no client links them.
 */

const FENCE = /^\s*(`{3,}|~{3,})/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
/** The `|---|:-:|` line under a table header: only pipes, colons, dashes and spaces, with both a pipe and a dash. */
const TABLE_RULE = /^(?=[^-]*-)(?=[^|]*\|)\s*[|:\- ]+$/;
const ZWJ = '\u2060';

/** Escapes Slack's three control characters. */
export function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Breaks literal broadcast words so no client turns them into a ping. */
export function neutraliseBroadcastWords(text: string): string {
  return text.replace(/@(channel|here|everyone)\b/gi, `@${ZWJ}$1`);
}

export function renderMrkdwn(markdown: string): string {
  const out: string[] = [];
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fenceMatch = FENCE.exec(line);
    if (fence !== undefined) {
      if (fenceMatch && fenceMatch[1]!.startsWith(fence[0]!) && fenceMatch[1]!.length >= fence.length && line.trim() === fenceMatch[1]) {
        fence = undefined;
        out.push('```');
      } else {
        out.push(escapeSlack(line));
      }
      continue;
    }
    if (fenceMatch) {
      // The language tag has no meaning in Slack; drop it so it is not shown as code.
      fence = fenceMatch[1]!;
      out.push('```');
      continue;
    }
    if (TABLE_ROW.test(line) && TABLE_RULE.test(lines[i + 1] ?? '')) {
      // Slack has no tables; a code block at least keeps the columns aligned.
      out.push('```');
      while (i < lines.length && TABLE_ROW.test(lines[i]!)) out.push(escapeSlack(lines[i++]!));
      out.push('```');
      i--;
      continue;
    }
    out.push(renderLine(line));
  }
  if (fence !== undefined) out.push('```');
  return out.join('\n');
}

function renderLine(line: string): string {
  const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
  if (heading) return heading[1] ? `*${renderInline(stripStrong(heading[1]))}*` : '';
  if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return '──────────';
  const quote = /^(\s*)>\s?(.*)$/.exec(line);
  if (quote) return `${quote[1]}>${quote[2] ? ' ' + renderLine(quote[2]) : ''}`;
  const bullet = /^(\s*)[-*+]\s+(\[[ xX]\]\s+)?(.*)$/.exec(line);
  if (bullet) {
    const box = bullet[2] ? (bullet[2].trim().toLowerCase() === '[x]' ? '☑ ' : '☐ ') : '';
    return `${bullet[1]}• ${box}${renderInline(bullet[3]!)}`;
  }
  return renderInline(line);
}

/** Headings are rendered bold; bold inside them would toggle it off again. */
function stripStrong(text: string): string {
  return text.replace(/\*\*(.+?)\*\*|__(.+?)__/g, (_m, a: string | undefined, b: string | undefined) => a ?? b ?? '');
}

// Inline code, Markdown links, raw autolinks, and the Slack mentions we let through.
const INLINE_TOKEN =
  /(`+)([\s\S]*?[^`])\1(?!`)|\[([^\]\n]+)\]\(\s*<?((?:https?:\/\/|mailto:)(?:[^\s()<>]|\([^\s()<>]*\))+)>?(?:\s+"[^"]*")?\s*\)|<((?:https?:\/\/|mailto:)[^\s<>|]+)>|<([@#][UWC][A-Z0-9]{2,})(?:\|[^<>]*)?>/g;

export function renderInline(text: string): string {
  let out = '';
  let last = 0;
  for (const m of text.matchAll(INLINE_TOKEN)) {
    out += renderPlain(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1] !== undefined) out += '`' + escapeSlack(m[2]!.trim() || m[2]!) + '`';
    else if (m[3] !== undefined) out += `<${escapeUrl(m[4]!)}|${linkLabel(m[3])}>`;
    else if (m[5] !== undefined) out += `<${escapeUrl(m[5])}>`;
    else out += `<${m[6]}>`;
  }
  return out + renderPlain(text.slice(last));
}

function escapeUrl(url: string): string {
  return url.replace(/&(?!amp;)/g, '&amp;').replace(/</g, '%3C').replace(/>/g, '%3E').replace(/\|/g, '%7C');
}

/** A link label cannot hold `|` or `>`; emphasis inside it still renders. */
function linkLabel(label: string): string {
  return renderPlain(label).replace(/\|/g, '¦');
}

const BOLD = '\u0001';

/** Plain prose: escape, then emphasis. Bold is parked on a sentinel so `*x*` → `_x_` leaves it alone. */
function renderPlain(text: string): string {
  if (!text) return '';
  let s = neutraliseBroadcastWords(escapeSlack(text.replace(/\u0001/g, '')));
  s = s.replace(/\*\*\*(?=\S)([\s\S]*?\S)\*\*\*/g, `${BOLD}_$1_${BOLD}`);
  s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__/g, (_m, a: string | undefined, b: string | undefined) => `${BOLD}${a ?? b}${BOLD}`);
  s = s.replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?![\w*])/g, '$1_$2_');
  s = s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, '~$1~');
  return s.replace(/\u0001/g, '*');
}
