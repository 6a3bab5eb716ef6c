import { redactSecrets, replaceKnownSecrets } from '../../basics/safety/secrets.js';

/**
 * The one way text reaches a dashboard page. Traces hold what users, models and tools wrote, so
 * every value is redacted again (the credential shapes traces use; the configured secrets were
 * already replaced when the line was written) and then HTML-escaped; only markup built by `html` templates passes through unescaped. A page is safe
 * as long as no code builds a `Html` by hand: `raw` exists for the few constant snippets.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** Redacts, then escapes for HTML text and quoted attribute values. */
export function esc(value: unknown): string {
  const s = typeof value === 'string' ? value : value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value, null, 2) ?? '' : String(value);
  return escapeHtml(redactSecrets(s));
}

/**
 * A finished page with the configured secrets (the dashboard token, the model key, platform
 * tokens…) replaced, as written and as escaped for HTML. The tracer replaces them when it writes
 * a line, but a line written before a secret was configured holds it in clear, and an arbitrary
 * token has no shape `esc` could recognise. The same replacement as the tracer's.
 */
export function withoutKnownSecrets(page: Html, known: readonly string[]): Html {
  const text = replaceKnownSecrets(page.text, [...new Set(known.flatMap((k) => [k, escapeHtml(k)]))]);
  return text === page.text ? page : new Html(text);
}

type Part = Html | string | number | boolean | undefined | null | readonly Part[];

function render(part: Part): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === undefined || part === null || part === false) return '';
  return esc(part);
}

/** Tagged template: the literal parts are markup, every interpolated value is escaped (arrays joined). */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** Constant markup only (never a value from a trace, a request or a file). */
export function raw(markup: string): Html {
  return new Html(markup);
}

/**
 * JSON for a `<script type="application/json">` block: `<` is written as \u003c so no value can
 * close the element, and values are redacted like any other page text.
 */
export function jsonBlock(id: string, value: unknown): Html {
  const json = redactSecrets(JSON.stringify(value)).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
  return new Html(`<script type="application/json" id="${esc(id)}">${json}</script>`);
}
