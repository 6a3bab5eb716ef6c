import { OPENAI_DEFAULT_BASE } from '../provider/model-probe.js';

/**
 * Whether the model takes images, asked of the server once (HERMES_VISION=auto): a chat request
 * with one 1×1 PNG. An answer means yes; a refusal that names images or content types means no
 * ("Invalid content type. image_url is only supported by certain models", "model does not
 * support image input", "… is not a multimodal model"). Anything else — no server, a refused key,
 * an unknown model, a 5xx — says nothing about images, and is not remembered.
 */

export type VisionAnswer = 'yes' | 'no' | 'unknown';

/** 1×1 transparent PNG. */
export const PROBE_PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
export const PROBE_TEXT = 'Reply with the single word OK.';

/** How a server says "no images here", in the words seen from OpenAI, vLLM, Ollama, LM Studio and llama.cpp. */
const REFUSES_IMAGES =
  /(not|n't|un)\s*support\w*[^.]{0,60}(image|vision|multi-?modal)|(image|vision|multi-?modal)[^.]{0,60}(not|n't|un)\s*support|only supported by certain models|invalid content type|not a multi-?modal|unknown content part|modalit/i;

export function refusesImages(status: number | undefined, message: string): boolean {
  return (status === 400 || status === 415 || status === 422 || status === 500) && REFUSES_IMAGES.test(message);
}

export async function probeVision(opts: { baseURL?: string; apiKey: string; model: string; timeoutMs?: number; fetch?: typeof fetch }): Promise<VisionAnswer> {
  const url = `${(opts.baseURL ?? OPENAI_DEFAULT_BASE).replace(/\/+$/, '')}/chat/completions`;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  const body = {
    model: opts.model,
    messages: [{ role: 'user', content: [{ type: 'text', text: PROBE_TEXT }, { type: 'image_url', image_url: { url: PROBE_PNG } }] }],
  };
  let res: Response;
  try {
    res = await (opts.fetch ?? fetch)(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000) });
  } catch {
    return 'unknown';
  }
  const text = await res.text().catch(() => '');
  if (res.ok) return 'yes';
  return refusesImages(res.status, text) ? 'no' : 'unknown';
}
