/**
 * A cheap look at the model server at start (`GET /models`, a few seconds at most), so a wrong
 * OPENAI_BASE_URL, a refused OPENAI_API_KEY or an unknown HERMES_MODEL shows in the log right away
 * instead of at the first message. Only ever a warning: the server may come up later, and some
 * servers list no models or have no /models at all.
 */

export type ProbeResult =
  | { kind: 'ok' }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'key_refused'; status: number }
  | { kind: 'not_found' }
  | { kind: 'model_unknown'; available: string[] }
  | { kind: 'inconclusive'; reason: string };

export interface ProbeOptions {
  baseURL?: string;
  apiKey: string;
  model: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export const OPENAI_DEFAULT_BASE = 'https://api.openai.com/v1';
const DEFAULT_PROBE_TIMEOUT_MS = 5_000;

export async function probeModel(opts: ProbeOptions): Promise<ProbeResult> {
  const url = `${(opts.baseURL ?? OPENAI_DEFAULT_BASE).replace(/\/+$/, '')}/models`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  let res: Response;
  try {
    res = await (opts.fetch ?? fetch)(url, { headers, signal: AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS) });
  } catch (err) {
    return { kind: 'unreachable', reason: failureReason(err) };
  }
  if (res.status === 401 || res.status === 403) return { kind: 'key_refused', status: res.status };
  if (res.status === 404) return { kind: 'not_found' };
  if (!res.ok) return { kind: 'inconclusive', reason: `HTTP ${res.status}` };
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    return { kind: 'inconclusive', reason: 'the answer was not JSON' };
  }
  const data = (body as { data?: unknown }).data;
  const ids = Array.isArray(data) ? data.flatMap((m) => (typeof (m as { id?: unknown })?.id === 'string' ? [(m as { id: string }).id] : [])) : [];
  if (ids.length === 0) return { kind: 'inconclusive', reason: 'the server lists no models' };
  return ids.includes(opts.model) ? { kind: 'ok' } : { kind: 'model_unknown', available: ids };
}

/** The start-up warning for a probe result, naming the setting to check; undefined when all is well. */
export function probeWarning(result: ProbeResult, opts: Pick<ProbeOptions, 'baseURL' | 'model' | 'apiKey'>): string | undefined {
  const where = opts.baseURL ?? `${OPENAI_DEFAULT_BASE} (the default; set OPENAI_BASE_URL for another server)`;
  switch (result.kind) {
    case 'ok':
    case 'inconclusive':
      return undefined;
    case 'unreachable':
      return `model server not reachable at ${where} (${result.reason}): check OPENAI_BASE_URL and that the server is running; the bot keeps running and retries at each message.`;
    case 'key_refused':
      return opts.apiKey && opts.apiKey !== 'not-needed'
        ? `model server at ${where} refused the API key (HTTP ${result.status}): check OPENAI_API_KEY.`
        : `model server at ${where} wants an API key (HTTP ${result.status}): set OPENAI_API_KEY.`;
    case 'not_found':
      return `model server at ${where} has no /models (HTTP 404): check that OPENAI_BASE_URL is the API base, usually ending in /v1.`;
    case 'model_unknown': {
      const shown = result.available.slice(0, 8).join(', ') + (result.available.length > 8 ? ', …' : '');
      return `model server at ${where} does not list HERMES_MODEL="${opts.model}" (it has: ${shown}): check HERMES_MODEL.`;
    }
  }
}

function failureReason(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return 'no answer within the probe time limit';
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}
