/**
 * What an approval prompt shows is exactly what runs, so the arguments are shown in full and
 * never cut. Every adapter can show this many characters of pretty-printed JSON in full (Slack:
 * several sections of one message; Discord: several messages before the one with the buttons);
 * a call whose arguments are longer is refused before any prompt, with a reason for the model.
 */
export const MAX_SHOWN_ARGS_CHARS = 12_000;

/**
 * The arguments exactly as every prompt shows them: pretty JSON in which nothing can change how the
 * prompt reads. Every adapter shows it inside a code block, and a value is the model's to choose:
 * three backticks in it closed the Slack block early (what followed was formatted as the message's
 * own text), and U+202E and other invisible format characters reorder or hide what a person reads.
 * Both are written as JSON escapes (`\u0060`, `\u202e`): the same value, parsed, as what runs.
 * Backticks and format characters occur only inside JSON strings, where such escapes are valid.
 */
export function shownArgsJson(args: unknown): string {
  return visibleJson(JSON.stringify(args, null, 2) ?? 'null');
}

/** A backtick that would start a run of three, and every invisible format character (Unicode Cf, line/paragraph separators). */
const HIDDEN = /`(?=``)|[\p{Cf}\u2028\u2029]/gu;

export function visibleJson(json: string): string {
  return json.replace(HIDDEN, unicodeEscapes);
}

/** The same for plain prompt text (a tool's description of the call, which may quote a value): format characters shown as escapes. */
export function visibleText(text: string): string {
  return text.replace(/[\p{Cf}\u2028\u2029]/gu, unicodeEscapes);
}

/** `\uXXXX` per UTF-16 unit: a character outside the BMP becomes its surrogate pair, as JSON writes it. */
function unicodeEscapes(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}
