/**
 * Splits rendered mrkdwn into messages. Pure.
 *
 * Invariants (tested): joining the parts' bodies with the separators they were cut at gives the
 * input back — nothing lost, nothing reordered; a cut inside a ``` block closes it at the end of
 * the part and reopens it at the start of the next, so every part renders on its own; the part
 * marker `(i/n)` is always a line of its own, never inside a line of the answer.
 */

/** Slack accepts 40,000 characters; long walls are unreadable, so we cut far earlier. */
export const SLACK_CHUNK_CHARS = 3_800;

const FENCE_LINE = /^```\s*$/;
/** Room for a closing fence plus a `(99/99)` marker line. */
const RESERVE = 24;

export function chunkMrkdwn(text: string, limit = SLACK_CHUNK_CHARS): string[] {
  const budget = Math.max(limit - RESERVE, 16);
  if (text.length <= limit) return [text];
  const bodies = splitBodies(text, budget);
  const total = bodies.length;
  return bodies.map((b, i) => `${b}\n(${i + 1}/${total})`);
}

/** Cuts into bodies of at most `budget` chars (plus fence repair), preferring paragraph, line, then word breaks. */
function splitBodies(text: string, budget: number): string[] {
  const parts: string[] = [];
  let rest = text;
  let inCode = false;
  // Each pass consumes at least one character, so the loop ends after at most text.length passes.
  while (rest.length > 0) {
    const prefix = inCode ? '```\n' : '';
    const room = budget - prefix.length - 4;
    if (rest.length <= room) {
      parts.push(prefix + rest);
      break;
    }
    const cut = findCut(rest, room);
    const piece = rest.slice(0, cut.end);
    rest = rest.slice(cut.next);
    const endsInCode = fenceStateAfter(piece, inCode);
    parts.push(prefix + piece + (endsInCode ? '\n```' : ''));
    inCode = endsInCode;
  }
  return parts;
}

/** Where to cut: `end` is the exclusive end of this part, `next` where the next part starts (skipping one separator). */
function findCut(text: string, room: number): { end: number; next: number } {
  const window = text.slice(0, room + 1);
  const para = window.lastIndexOf('\n\n');
  if (para > room / 2) return { end: para, next: para + 2 };
  const line = window.lastIndexOf('\n');
  if (line > room / 4) return { end: line, next: line + 1 };
  const space = window.lastIndexOf(' ');
  if (space > room / 4) return { end: space, next: space + 1 };
  // No break in sight: cut hard, but never between a surrogate pair.
  let end = Math.max(room, 1);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff && end > 1) end -= 1;
  return { end, next: end };
}

function fenceStateAfter(piece: string, inCode: boolean): boolean {
  let state = inCode;
  for (const line of piece.split('\n')) if (FENCE_LINE.test(line)) state = !state;
  return state;
}

/** Removes the `(i/n)` marker line a part ends with, if any. */
export function stripPartMarker(part: string): string {
  return part.replace(/\n\(\d+\/\d+\)$/, '');
}
