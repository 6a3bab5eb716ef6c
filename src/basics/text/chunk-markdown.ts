/**
 * Splits a Markdown answer into chat messages of at most `limit` characters. One splitter for every
 * platform; each adapter passes its own limit (and whether parts carry an `(i/n)` marker).
 *
 * Invariants (tested):
 * - nothing is dropped or reordered: the parts, with the fence lines added here and the markers
 *   removed, concatenate to the input (markers replace one line break at a part's end);
 * - a part that ends inside a ``` block is closed, and the next part reopens it with the same
 *   opener (```lang), so every part renders on its own;
 * - cuts prefer line ends, then spaces; an over-long line is cut hard as a last resort, never
 *   between the two halves of a surrogate pair;
 * - the marker, when asked for, is a line of its own; a text that fits is returned as it is.
 */

export interface ChunkOptions {
  /** Most characters per message, everything included. */
  limit: number;
  /** End every part of a split answer with an `(i/n)` line (Slack shows parts apart; Discord groups them). */
  partMarkers?: boolean;
}

const FENCE = '```';
/** Longest fence opener carried over; a longer info string is reopened as a bare fence. */
const MAX_OPENER = 24;
/** Room kept free in every part for a closing fence ("\n```"). */
const CLOSE_RESERVE = FENCE.length + 1;
/** Room for "\n(999/999)". */
const MARKER_RESERVE = 10;

export function chunkMarkdown(text: string, opts: ChunkOptions): string[] {
  if (text.trim() === '') return [];
  if (text.length <= opts.limit) return [text];
  const limit = opts.partMarkers ? opts.limit - MARKER_RESERVE : opts.limit;
  const parts = splitBodies(text, limit);
  if (!opts.partMarkers || parts.length === 1) return parts;
  return parts.map((p, i) => `${p.endsWith('\n') ? p.slice(0, -1) : p}\n(${i + 1}/${parts.length})`);
}

/** Removes the `(i/n)` line a part ends with, if any. */
export function stripPartMarker(part: string): string {
  return part.replace(/\n\(\d+\/\d+\)$/, '');
}

function splitBodies(text: string, limit: number): string[] {
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
  // Each pass takes at least one character, so at most line.length passes.
  for (let guard = 0; rest.length > max && guard < line.length; guard++) {
    const space = rest.slice(0, max).lastIndexOf(' ');
    let cut = space >= max / 2 ? space + 1 : max;
    const code = rest.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff && cut > 1) cut -= 1;
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest) out.push(rest);
  return out;
}

/** Which code fence (its opener, e.g. ```python) is still open at the end of `text`, if any. */
export function openFenceAt(text: string): string | null {
  let open: string | null = null;
  for (const line of text.split('\n')) open = nextFenceState(line, open);
  return open;
}

/** After this line, which fence (opener text) is open, if any. */
function nextFenceState(line: string, open: string | null): string | null {
  const trimmed = line.replace(/\n$/, '').trim();
  if (!/^\s{0,3}```/.test(line)) return open;
  if (open !== null) return /^```\s*$/.test(trimmed) ? null : open;
  // "```js code```" on one line opens and closes itself.
  const count = trimmed.split(FENCE).length - 1;
  if (count % 2 === 0) return null;
  return trimmed.length <= MAX_OPENER ? trimmed : FENCE;
}

function isOnlyReopenedFence(current: string, open: string | null): boolean {
  return current === '' || (open !== null && current === `${open}\n`);
}
