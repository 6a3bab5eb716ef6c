import type { NetClient } from './net-client.js';
import { snippetText } from './web-content.js';
import { redactSecrets, REDACTED } from '../../basics/safety/secrets.js';
import { isRecord } from '../../basics/values.js';

/**
 * Web search backends behind one shape. Requests go through the tool's NetClient, so a SearXNG
 * on a private address needs HERMES_NET_ALLOW like any other internal service. The Brave key
 * travels only in its header and is scrubbed from every message that could reach the model.
 */

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
  date?: string;
}

export interface SearchBackend {
  name: 'searxng' | 'brave';
  search(query: string, maxResults: number, net: NetClient, signal: AbortSignal): Promise<SearchResult[]>;
}

export const BRAVE_DEFAULT_ENDPOINT = 'https://api.search.brave.com/res/v1/web/search';
const MAX_RESPONSE_BYTES = 1024 * 1024;
const TIMEOUT_MS = 10_000;

type Json = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v.trim() : undefined);

function httpUrl(v: unknown): string | undefined {
  const s = str(v);
  if (!s) return undefined;
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.toString() : undefined;
  } catch {
    return undefined;
  }
}

function toResult(title: unknown, url: unknown, snippet: unknown, date: unknown): SearchResult | undefined {
  const u = httpUrl(url);
  if (!u) return undefined;
  const d = str(date);
  return {
    title: snippetText(str(title) ?? u).slice(0, 300),
    url: u,
    snippet: snippetText(str(snippet) ?? '').slice(0, 500),
    ...(d ? { date: d.slice(0, 40) } : {}),
  };
}

function parseJson(body: Buffer, who: string): Json {
  try {
    const data: unknown = JSON.parse(body.toString('utf8'));
    if (isRecord(data)) return data;
  } catch {
    // fall through to the clear error below
  }
  throw new Error(`${who} did not answer with a JSON object`);
}

export function searxngBackend(baseUrl: string): SearchBackend {
  return {
    name: 'searxng',
    async search(query, maxResults, net, signal) {
      const url = new URL('search', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      const res = await net.request({ url: url.toString(), headers: { accept: 'application/json' }, maxBytes: MAX_RESPONSE_BYTES, timeoutMs: TIMEOUT_MS, signal });
      if (res.status === 403) {
        throw new Error(`SearXNG at ${url.host} answered HTTP 403: its JSON output is probably disabled (add "json" to search.formats in its settings.yml)`);
      }
      if (res.status < 200 || res.status >= 300) throw new Error(`SearXNG at ${url.host} answered HTTP ${res.status}`);
      const data = parseJson(res.body, `SearXNG at ${url.host}`);
      const items = Array.isArray(data.results) ? data.results : [];
      return items
        .filter(isRecord)
        .map((r) => toResult(r.title, r.url, r.content, r.publishedDate))
        .filter((r): r is SearchResult => r !== undefined)
        .slice(0, maxResults);
    },
  };
}

export function braveBackend(apiKey: string, endpoint = BRAVE_DEFAULT_ENDPOINT): SearchBackend {
  const scrub = (text: string) => redactSecrets(text.split(apiKey).join(REDACTED));
  return {
    name: 'brave',
    async search(query, maxResults, net, signal) {
      const url = new URL(endpoint);
      url.searchParams.set('q', query);
      url.searchParams.set('count', String(maxResults));
      try {
        const res = await net.request({
          url: url.toString(),
          headers: { accept: 'application/json', 'x-subscription-token': apiKey },
          maxBytes: MAX_RESPONSE_BYTES,
          timeoutMs: TIMEOUT_MS,
          signal,
        });
        if (res.status === 401 || res.status === 403) {
          throw new Error(`Brave Search refused the API key (HTTP ${res.status}); the operator should check BRAVE_API_KEY`);
        }
        if (res.status === 429) throw new Error('Brave Search rate limit reached (HTTP 429); try again later');
        if (res.status < 200 || res.status >= 300) throw new Error(`Brave Search answered HTTP ${res.status}`);
        const data = parseJson(res.body, 'Brave Search');
        const web = isRecord(data.web) ? data.web : {};
        const items = Array.isArray(web.results) ? web.results : [];
        return items
          .filter(isRecord)
          .map((r) => toResult(r.title, r.url, r.description, r.page_age ?? r.age))
          .filter((r): r is SearchResult => r !== undefined)
          .slice(0, maxResults);
      } catch (err) {
        if (err instanceof Error) err.message = scrub(err.message);
        throw err;
      }
    },
  };
}

/**
 * Backends from `tools.web_search.settings`, in the order they are tried: SearXNG first (it is
 * self-hosted), then Brave; `backend: brave` puts Brave first. Invalid settings are skipped.
 */
export function backendsFromSettings(settings: Record<string, unknown>): SearchBackend[] {
  const out: SearchBackend[] = [];
  const searx = httpUrl(settings.searxngUrl);
  if (searx) out.push(searxngBackend(searx));
  const key = str(settings.braveApiKey);
  if (key) out.push(braveBackend(key, httpUrl(settings.braveEndpoint) ?? BRAVE_DEFAULT_ENDPOINT));
  if (settings.backend === 'brave') out.reverse();
  return out;
}

/**
 * The env half of the web_search settings (HERMES_SEARXNG_URL, BRAVE_API_KEY). The lead merges
 * it under the config file's `tools.web_search.settings`, file values winning:
 * `{ ...webSearchSettingsFromEnv(process.env), ...fileSettings }`.
 */
export function webSearchSettingsFromEnv(env: Record<string, string | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const searx = env.HERMES_SEARXNG_URL?.trim();
  if (searx) out.searxngUrl = searx;
  const key = env.BRAVE_API_KEY?.trim();
  if (key) out.braveApiKey = key;
  return out;
}
