import * as z from 'zod';

/**
 * zod builders for environment variables. Every value arrives as a trimmed, non-blank string or
 * not at all; each builder carries its own fix text, written to follow `NAME="value" ` (see
 * formatIssue), so one bad variable becomes one line that names it and says what to set.
 */

/** A whole number with a default; `max` and its own wording when the range needs explaining. */
export function wholeNumber(fallback: number, opts: { min: number; max?: number; fix?: string }) {
  const fix = opts.fix ?? `is not valid: set it to a whole number >= ${opts.min} (default ${fallback}), or unset it.`;
  return z
    .string()
    .regex(/^\d+$/, { error: fix })
    .transform(Number)
    .pipe(z.number().min(opts.min, { error: fix }).max(opts.max ?? Number.MAX_SAFE_INTEGER, { error: fix }))
    .optional()
    .transform((v) => v ?? fallback);
}

/** A decimal number within [min, max]. */
export function decimal(fallback: number, min: number, max: number) {
  const fix = `is not valid: use a number from ${min} to ${max} (default ${fallback}).`;
  return z
    .string()
    .transform(Number)
    .pipe(z.number({ error: fix }).min(min, { error: fix }).max(max, { error: fix }))
    .optional()
    .transform((v) => v ?? fallback);
}

/** One of a few words. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T, fallback: T[number], fix: string) {
  return z
    .enum(values, { error: `is not valid: ${fix}` })
    .optional()
    .transform((v): T[number] => v ?? fallback);
}

/** An http(s) URL, kept as written. */
export function httpUrl(example: string) {
  return z
    .string()
    .refine(isHttpUrl, { error: `is not an http(s) URL: set it like ${example}, or unset it.` })
    .optional();
}

/** Free text (names, tokens); `startsWith` rejects a value that is plainly the wrong kind of token. */
export function text(check?: { startsWith: string; fix: string }) {
  const base = z.string();
  return (check ? base.refine((v) => v.startsWith(check.startsWith), { error: check.fix }) : base).optional();
}

/** A comma list; each entry is checked on its own, so a bad one is named by itself. */
export function commaList(entry: RegExp, fix: string, normalise: (s: string) => string = (s) => s) {
  return z
    .string()
    .optional()
    .transform((raw) => (raw ?? '').split(',').map((s) => normalise(s.trim())).filter(Boolean))
    .pipe(z.array(z.string().regex(entry, { error: `is not valid: ${fix}` })));
}

/** An IANA time zone name the runtime knows. */
export function timeZone(fallback: string) {
  return z
    .string()
    .refine(isTimeZone, { error: 'is not an IANA time zone: use a name like Europe/Berlin or UTC.' })
    .optional()
    .transform((v) => v ?? fallback);
}

/**
 * OTEL_EXPORTER_OTLP_HEADERS as the OpenTelemetry spec writes it: `key=value,key2=value2`, values
 * URL-encoded. The values are usually credentials, so the error line never shows them.
 */
export function otlpHeaders() {
  const fix = 'is not valid: write it as name=value pairs separated by commas, e.g. authorization=Bearer%20abc,x-team=ops (values URL-encoded).';
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const headers: Record<string, string> = {};
      for (const pair of (raw ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
        const at = pair.indexOf('=');
        const name = at > 0 ? pair.slice(0, at).trim() : '';
        let value: string | undefined;
        try {
          value = decodeURIComponent(pair.slice(at + 1).trim());
        } catch {
          value = undefined;
        }
        if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || value === undefined || /[\r\n]/.test(value)) {
          ctx.addIssue({ code: 'custom', path: [], message: fix });
          return z.NEVER;
        }
        headers[name.toLowerCase()] = value;
      }
      return headers;
    });
}

function isHttpUrl(raw: string): boolean {
  try {
    const u = new URL(raw);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Variables whose value must never be echoed back in an error line (`…_TOKEN`, not `…_MAX_TOKENS`; OTLP headers carry API keys). */
const SECRET_NAME = /(?:^|_)(?:TOKEN|SECRET|KEY|PASSWORD|CREDENTIALS?|HEADERS)$/;

/**
 * One issue as one line. Path `[]` is a whole-line message (cross-variable rules); `[NAME]` shows
 * the value as set (unless the name looks secret); `[NAME, i]` names the bad entry of a comma list.
 */
export function formatIssue(issue: z.core.$ZodIssue, env: Record<string, string>, redact: (s: string) => string): string {
  const [name, index] = issue.path;
  if (name === undefined) return issue.message;
  const secret = SECRET_NAME.test(String(name));
  if (typeof index === 'number') {
    const entry = typeof issue.input === 'string' && !secret ? ` ${redact(JSON.stringify(issue.input))}` : '';
    return `${String(name)} entry${entry} ${issue.message}`;
  }
  const raw = env[String(name)];
  const shown = raw === undefined || secret ? '' : `=${redact(JSON.stringify(raw))}`;
  return `${String(name)}${shown} ${issue.message}`;
}

/** Env as the schema sees it: values trimmed, blank ones absent (an empty `FOO=` means unset). */
export function presentValues(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && v.trim() !== '') out[k] = v.trim();
  }
  return out;
}
