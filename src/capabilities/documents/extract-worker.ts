import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * PDF and DOCX parsing runs on a worker thread of its own, one per document. Why: both parsers are
 * synchronous JavaScript on the thread that calls them, so a 300-page PDF (or a file built to
 * expand enormously) would stall every conversation while it is read. On a worker it can be
 * stopped: after a time limit the thread is terminated, and a heap limit ends one that swells.
 *
 * The worker is plain CommonJS evaluated from this string (as the SQLite checkpointer's is), so it
 * runs the same from the sources, the compiled bundle and the tests; the parsers are loaded from
 * node_modules by the paths resolved here.
 */

export type RawExtraction =
  | { ok: true; kind: 'pdf'; pages: string[]; totalPages: number }
  | { ok: true; kind: 'docx'; html: string }
  | { ok: false; failure: 'encrypted' | 'corrupt' | 'timeout' | 'memory'; detail: string };

export interface ExtractLimits {
  timeoutMs: number;
  maxPages: number;
  /** Text beyond this many characters is not collected. */
  maxChars: number;
  heapMb: number;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { kind, data, maxPages, maxChars } = workerData;
async function pdf() {
  const pdfjs = await import(workerData.pdfjsUrl);
  const doc = await pdfjs.getDocument({ data, isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;
  const pages = [];
  let chars = 0;
  for (let n = 1; n <= Math.min(doc.numPages, maxPages) && chars < maxChars; n++) {
    const page = await doc.getPage(n);
    const content = await page.getTextContent();
    let text = '';
    for (const item of content.items) {
      if (typeof item.str !== 'string') continue;
      text += item.str;
      if (item.hasEOL) text += '\\n';
    }
    pages.push(text);
    chars += text.length;
    page.cleanup();
  }
  const totalPages = doc.numPages;
  await doc.destroy();
  return { ok: true, kind: 'pdf', pages, totalPages };
}
async function docx() {
  const mammoth = require(workerData.mammothPath);
  const noImages = mammoth.images.imgElement(() => Promise.resolve({ src: '' }));
  const result = await mammoth.convertToHtml({ buffer: Buffer.from(data) }, { convertImage: noImages });
  return { ok: true, kind: 'docx', html: result.value.slice(0, maxChars * 4) };
}
(kind === 'pdf' ? pdf() : docx()).then(
  (r) => parentPort.postMessage(r),
  (err) => parentPort.postMessage({ ok: false, name: String((err && err.name) || 'Error'), message: String((err && err.message) || err) }),
);
`;

let modulePaths: { pdfjsUrl: string; mammothPath: string } | undefined;
function parsers(): { pdfjsUrl: string; mammothPath: string } {
  if (!modulePaths) {
    const require = createRequire(import.meta.url);
    modulePaths = {
      pdfjsUrl: pathToFileURL(require.resolve('pdfjs-dist/legacy/build/pdf.mjs')).href,
      mammothPath: require.resolve('mammoth'),
    };
  }
  return modulePaths;
}

export function extractInWorker(kind: 'pdf' | 'docx', data: Uint8Array, limits: ExtractLimits, signal?: AbortSignal): Promise<RawExtraction> {
  return new Promise((resolve) => {
    // The bytes are copied into a buffer of their own and moved (not cloned) to the worker.
    const copy = new Uint8Array(data);
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { kind, data: copy, maxPages: limits.maxPages, maxChars: limits.maxChars, ...parsers() },
      transferList: [copy.buffer],
      resourceLimits: { maxOldGenerationSizeMb: limits.heapMb },
      stdout: true,
      stderr: true,
    });
    // Parser warnings must not land in the bot's log stream: read and dropped.
    worker.stdout.resume();
    worker.stderr.resume();
    let settled = false;
    const finish = (r: RawExtraction) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(r);
      void worker.terminate();
    };
    const timer = setTimeout(() => finish({ ok: false, failure: 'timeout', detail: `over ${limits.timeoutMs} ms` }), limits.timeoutMs);
    const onAbort = () => finish({ ok: false, failure: 'timeout', detail: 'cancelled' });
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: RawExtraction | { ok: false; name: string; message: string }) => {
      if (m.ok) return finish(m);
      if ('failure' in m) return finish(m);
      finish({ ok: false, failure: m.name === 'PasswordException' ? 'encrypted' : 'corrupt', detail: `${m.name}: ${m.message}` });
    });
    worker.on('error', (err: Error & { code?: string }) =>
      finish({ ok: false, failure: err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : 'corrupt', detail: err.message }),
    );
    worker.on('exit', (code) => finish({ ok: false, failure: 'corrupt', detail: `the reader stopped (exit ${code})` }));
  });
}
