import { createHash } from 'node:crypto';
import path from 'node:path';
import { DOCUMENT_NOTES } from './document-notes.js';
import { docxHtmlToText } from './docx-text.js';
import { extractInWorker, type ExtractLimits, type RawExtraction } from './extract-worker.js';

/**
 * The text of PDF and Word (DOCX) documents, for read_file. Pages (PDF) and headings (DOCX) are
 * marked so the model can say where something is. Bounded three ways: pages read, characters kept
 * and time spent (on a worker thread that is stopped at the limit); a damaged or password-protected
 * file gets an answer that says so instead of an error dump.
 */

export type DocumentKind = 'pdf' | 'docx';

export type DocumentText =
  | { ok: true; kind: DocumentKind; label: string; text: string; pages?: number }
  | { ok: false; message: string };

export const DOCUMENT_LIMITS: ExtractLimits & { maxBytes: number } = {
  timeoutMs: 20_000,
  maxPages: 300,
  maxChars: 1_000_000,
  heapMb: 256,
  maxBytes: 50 * 1024 * 1024,
};

const LABELS: Record<DocumentKind, string> = { pdf: 'PDF document', docx: 'Word document' };

/**
 * Decided by the bytes: `%PDF-` near the start, or a ZIP whose entries include the Word body.
 * A .docx name is only a hint for ZIPs whose first entries do not show the `word/` folder.
 */
export function documentKind(name: string, sample: Uint8Array): DocumentKind | undefined {
  const head = Buffer.from(sample.subarray(0, 1024)).toString('latin1');
  if (head.includes('%PDF-')) return 'pdf';
  const zip = sample[0] === 0x50 && sample[1] === 0x4b && sample[2] === 0x03 && sample[3] === 0x04;
  if (!zip) return undefined;
  const text = Buffer.from(sample).toString('latin1');
  if (text.includes('word/') || path.extname(name).toLowerCase() === '.docx') return 'docx';
  return undefined;
}

/** Recently read documents, by content hash: reading on with `offset` does not parse the file again. */
const CACHE_ENTRIES = 8;
const cache = new Map<string, DocumentText>();

export async function documentText(rel: string, kind: DocumentKind, data: Uint8Array, opts: { limits?: Partial<ExtractLimits>; signal?: AbortSignal } = {}): Promise<DocumentText> {
  const limits = { ...DOCUMENT_LIMITS, ...opts.limits };
  if (data.length > DOCUMENT_LIMITS.maxBytes) return { ok: false, message: DOCUMENT_NOTES.tooBig(rel, data.length, DOCUMENT_LIMITS.maxBytes) };
  const key = `${kind}:${limits.maxPages}:${limits.maxChars}:${createHash('sha256').update(data).digest('hex')}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const raw = await extractInWorker(kind, data, limits, opts.signal);
  const result = compose(rel, kind, raw, limits.maxChars);
  // Only answers worth repeating are kept: a timeout may pass on a quieter machine.
  if (result.ok || (raw.ok === false && raw.failure !== 'timeout')) {
    cache.set(key, result);
    if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  }
  return result;
}

function compose(rel: string, kind: DocumentKind, raw: RawExtraction, maxChars: number): DocumentText {
  if (!raw.ok) {
    switch (raw.failure) {
      case 'encrypted':
        return { ok: false, message: DOCUMENT_NOTES.encrypted(rel) };
      case 'timeout':
        return { ok: false, message: DOCUMENT_NOTES.tooSlow(rel, Math.round(DOCUMENT_LIMITS.timeoutMs / 1000)) };
      case 'memory':
        return { ok: false, message: DOCUMENT_NOTES.tooMuchMemory(rel) };
      case 'corrupt':
        return { ok: false, message: DOCUMENT_NOTES.corrupt(rel, LABELS[kind]) };
    }
  }
  if (raw.kind === 'docx') {
    const text = docxHtmlToText(raw.html);
    return { ok: true, kind: 'docx', label: LABELS.docx, text: capped(text || DOCUMENT_NOTES.noText, maxChars) };
  }
  const parts = raw.pages.map((page, i) => `--- page ${i + 1} of ${raw.totalPages} ---\n${tidy(page)}`);
  if (raw.pages.length < raw.totalPages) parts.push(DOCUMENT_NOTES.pagesCut(raw.pages.length, raw.totalPages));
  const empty = raw.pages.every((p) => p.trim() === '');
  const text = empty ? `${parts.join('\n\n')}\n\n${DOCUMENT_NOTES.noText}` : parts.join('\n\n');
  return { ok: true, kind: 'pdf', label: LABELS.pdf, text: capped(text, maxChars), pages: raw.totalPages };
}

function tidy(text: string): string {
  return text.replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
}

function capped(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n${DOCUMENT_NOTES.charsCut(max)}`;
}
