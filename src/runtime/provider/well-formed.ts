/**
 * A model (or a server cutting its output mid-character) can send half of a surrogate pair. Such
 * a string is not valid Unicode: a later encoder may pair it with the next character and so
 * swallow that character (Slack showed "ab\uD800cd" as "ab𐁣d"). Each lone half becomes U+FFFD, and
 * everything around it is kept.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}
