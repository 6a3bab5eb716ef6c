/**
 * What an approval prompt shows is exactly what runs, so the arguments are shown in full and
 * never cut. Every adapter can show this many characters of pretty-printed JSON in full (Slack:
 * several sections of one message; Discord: several messages before the one with the buttons);
 * a call whose arguments are longer is refused before any prompt, with a reason for the model.
 */
export const MAX_SHOWN_ARGS_CHARS = 12_000;

/** The arguments exactly as every prompt shows them. */
export function shownArgsJson(args: unknown): string {
  return JSON.stringify(args, null, 2) ?? 'null';
}
