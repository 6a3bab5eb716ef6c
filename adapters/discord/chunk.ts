/**
 * Splits a Markdown answer into Discord messages of at most `limit` characters (2,000 by default).
 *
 * Invariants:
 * - no text is dropped or reordered: concatenating the parts and removing only the fence lines this
 *   function adds gives the input back (a whitespace-only tail, which Discord would trim anyway,
 *   is the one exception);
 * - a part that ends inside a ``` code block is closed with ``` and the next part reopens the block
 *   with the same opener (```lang), so every part renders on its own;
 * - splits prefer line ends, then spaces; a single over-long line is cut as a last resort.
 * No part markers are added: Discord shows consecutive messages together, and a marker would be one
 * more thing to strip when someone copies the answer.
 */

export const DISCORD_MESSAGE_LIMIT = 2000;

const FENCE = '```';
/** Longest fence opener we carry over; a longer info string is reopened as a bare fence. */
const MAX_OPENER = 24;
/** Room kept free in every part for a closing fence ("\n```"). */
const CLOSE_RESERVE = FENCE.length + 1;

export function splitMessage(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  if (text.trim() === '') return [];
  if (text.length <= limit) return [text];
  // Worst case a part starts with a reopened fence and must still take at least one character.
  const pieceMax = limit - CLOSE_RESERVE - (MAX_OPENER + 1);
  if (pieceMax < 1) throw new RangeError(`limit ${limit} is too small to split Markdown`);

  const parts: string[] = [];
  let current = '';
  let openFence: string | null = null;

  const flush = (): void => {
    if (openFence !== null) {
      parts.push(current + (current.endsWith('\n') ? '' : '\n') + FENCE);
      current = `${openFence}\n`;
    } else {
      parts.push(current);
      current = '';
    }
  };

  for (const line of splitLines(text)) {
    const pieces = line.length <= pieceMax ? [line] : cutLongLine(line, pieceMax);
    for (const piece of pieces) {
      if (current.length + piece.length + CLOSE_RESERVE > limit && !isOnlyReopenedFence(current, openFence)) flush();
      current += piece;
    }
    // Only a whole line can open or close a fence; cut pieces of one line are never fence lines.
    openFence = nextFenceState(line, openFence);
  }
  if (current.trim() !== '' && !isOnlyReopenedFence(current, openFence)) parts.push(current);
  else if (parts.length === 0) parts.push(current);
  return parts;
}

/** Lines with their trailing "\n" kept, so joining them gives the text back. */
function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** Cuts one line into pieces of at most `max`, preferring to cut after a space. */
function cutLongLine(line: string, max: number): string[] {
  const out: string[] = [];
  let rest = line;
  for (let guard = 0; rest.length > max && guard < line.length; guard++) {
    const window = rest.slice(0, max);
    const space = window.lastIndexOf(' ');
    const cut = space >= max / 2 ? space + 1 : max;
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest) out.push(rest);
  return out;
}

/** After this line, which fence (opener text) is open, if any. */
function nextFenceState(line: string, open: string | null): string | null {
  const trimmed = line.replace(/\n$/, '').trim();
  if (!/^\s{0,3}```/.test(line)) return open;
  if (open !== null) return trimmed === FENCE || /^```\s*$/.test(trimmed) ? null : open;
  // "```js code```" on one line opens and closes itself.
  const count = trimmed.split(FENCE).length - 1;
  if (count % 2 === 0) return null;
  return trimmed.length <= MAX_OPENER ? trimmed : FENCE;
}

function isOnlyReopenedFence(current: string, open: string | null): boolean {
  return current === '' || (open !== null && current === `${open}\n`);
}
