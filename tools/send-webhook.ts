import * as z from 'zod';
import { defineTool } from '../src/capabilities/toolkit/tool-api.js';

/**
 * send_webhook: POST or PUT a JSON or form body to a URL. It acts in the world, so it needs a
 * human's approval by default (an operator may turn that off with tools.send_webhook.needsApproval).
 * A non-2xx answer is thrown with its status and a body excerpt, so the model can adapt (for
 * example switch JSON to form) instead of guessing.
 */

const EXCERPT_CHARS = 300;
const MAX_RESPONSE_BYTES = 64 * 1024;

// Connection-level and framing headers belong to our HTTP client, never to the model.
const FORBIDDEN_HEADERS = new Set([
  'host', 'content-length', 'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization',
  'te', 'trailer', 'trailers', 'transfer-encoding', 'upgrade', 'expect',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

const input = z.object({
  url: z.string().min(1).max(4_000).describe('Absolute http(s) URL of the webhook'),
  body: z
    .union([z.string().max(100_000), z.record(z.string(), z.unknown())])
    .describe('The payload: a JSON object, or a string (JSON text, or k=v&k2=v2 for form)'),
  method: z.enum(['POST', 'PUT']).optional().describe('Default POST'),
  format: z.enum(['json', 'form']).optional().describe('json (default) or form (application/x-www-form-urlencoded)'),
  headers: z.record(z.string(), z.string().max(4_000)).optional().describe('Extra request headers'),
});

type Args = z.infer<typeof input>;

function formValue(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null || v === undefined) return '';
  return JSON.stringify(v);
}

function toForm(obj: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) params.append(k, formValue(v));
  return params.toString();
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The encoded body and its content type; throws a message the model can act on. */
export function encodeWebhookBody(body: Args['body'], format: 'json' | 'form'): { body: string; contentType: string } {
  if (format === 'json') {
    if (typeof body !== 'string') return { body: JSON.stringify(body), contentType: 'application/json' };
    try {
      JSON.parse(body);
    } catch {
      throw new Error('body is a string that is not valid JSON: pass a JSON object, a JSON string, or use format "form" with k=v pairs');
    }
    return { body, contentType: 'application/json' };
  }
  const contentType = 'application/x-www-form-urlencoded';
  if (typeof body !== 'string') return { body: toForm(body), contentType };
  const asObject = parseJsonObject(body);
  if (asObject) return { body: toForm(asObject), contentType };
  const pairs = body.split('&');
  if (body.trim() === '' || !pairs.every((p) => /^[^=&]+=[^&]*$/.test(p))) {
    throw new Error('with format "form", a string body must be k=v pairs joined by & (e.g. text=hi&channel=ops) or a JSON object');
  }
  return { body: new URLSearchParams(body).toString(), contentType };
}

/**
 * Checked extra headers (lower-case names); throws on one the model may not set. Header names are
 * case-insensitive: `X-Token` and `x-token` are one header, so the prompt would show two values
 * while only one is sent. Such a pair is refused rather than one of them picked.
 */
export function checkWebhookHeaders(headers: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const firstSpelling = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    const earlier = firstSpelling.get(lower);
    if (earlier !== undefined) throw new Error(`headers "${earlier}" and "${name}" are the same header (names ignore case); send it once`);
    firstSpelling.set(lower, name);
    if (!HEADER_NAME.test(name)) throw new Error(`header name ${JSON.stringify(name.slice(0, 60))} is not a valid HTTP header name`);
    if (FORBIDDEN_HEADERS.has(lower)) {
      throw new Error(`header "${name}" cannot be set: Host, Content-Length and connection-level headers are managed by the HTTP client`);
    }
    if (/[\r\n\0]/.test(value)) throw new Error(`header "${name}" has a line break or NUL in its value`);
    out[lower] = value;
  }
  return out;
}

function excerpt(body: Buffer): string {
  const text = body.toString('utf8').replace(/\s+/g, ' ').trim();
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS - 1)}…` : text;
}

export const sendWebhookTool = defineTool({
  name: 'send_webhook',
  description:
    'Send an HTTP POST or PUT with a JSON or form body to a webhook URL. A person approves each call before it is sent. A non-2xx answer is reported with its status and the start of the response body.',
  input,
  category: 'network',
  effect: 'outward',
  needsApproval: true,
  sideEffects: true,
  // Everything that would refuse the call anyway is found before a person is asked to approve it.
  async check(args, ctx) {
    encodeWebhookBody(args.body, args.format ?? 'json');
    checkWebhookHeaders(args.headers);
    await ctx.net.check(args.url, ctx.signal);
  },
  async run(args, ctx) {
    const format = args.format ?? 'json';
    const encoded = encodeWebhookBody(args.body, format);
    const headers = { 'content-type': encoded.contentType, accept: 'application/json, text/plain;q=0.9, */*;q=0.5', ...checkWebhookHeaders(args.headers) };
    const res = await ctx.net.request({
      url: args.url,
      method: args.method ?? 'POST',
      headers,
      body: encoded.body,
      maxBytes: MAX_RESPONSE_BYTES,
      signal: ctx.signal,
    });
    const answer = excerpt(res.body);
    if (res.status < 200 || res.status >= 300) {
      throw new Error(`HTTP ${res.status} from ${new URL(res.url).host}${answer ? `: ${answer}` : ' (empty body)'}`);
    }
    return {
      summary: `Sent (${args.method ?? 'POST'} ${format}). HTTP ${res.status} from ${new URL(res.url).host}${answer ? `: ${answer}` : ''}`,
      raw: { status: res.status, url: res.url },
    };
  },
});

export default sendWebhookTool;
