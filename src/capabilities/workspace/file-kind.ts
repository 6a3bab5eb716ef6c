import path from 'node:path';

/**
 * What kind of file this is, for the model: text it can read (with a label for CSV, JSON,
 * Markdown…) or binary it gets a description of. Decided from the bytes first (a NUL byte or
 * invalid UTF-8 is binary whatever the name says), the extension only names the flavour.
 */

export type FileKind = { kind: 'text'; label: string; mime: string } | { kind: 'binary'; label: string; mime: string };

const TEXT_TYPES: Record<string, [label: string, mime: string]> = {
  '.csv': ['CSV', 'text/csv'],
  '.tsv': ['TSV', 'text/tab-separated-values'],
  '.json': ['JSON', 'application/json'],
  '.jsonl': ['JSON lines', 'application/jsonl'],
  '.md': ['Markdown', 'text/markdown'],
  '.markdown': ['Markdown', 'text/markdown'],
  '.txt': ['text', 'text/plain'],
  '.log': ['log', 'text/plain'],
  '.py': ['Python', 'text/x-python'],
  '.js': ['JavaScript', 'text/javascript'],
  '.mjs': ['JavaScript', 'text/javascript'],
  '.ts': ['TypeScript', 'text/x-typescript'],
  '.sh': ['shell script', 'text/x-shellscript'],
  '.html': ['HTML', 'text/html'],
  '.xml': ['XML', 'application/xml'],
  '.yaml': ['YAML', 'application/yaml'],
  '.yml': ['YAML', 'application/yaml'],
  '.svg': ['SVG', 'image/svg+xml'],
};

const BINARY_TYPES: Record<string, [label: string, mime: string]> = {
  '.png': ['PNG image', 'image/png'],
  '.jpg': ['JPEG image', 'image/jpeg'],
  '.jpeg': ['JPEG image', 'image/jpeg'],
  '.gif': ['GIF image', 'image/gif'],
  '.webp': ['WebP image', 'image/webp'],
  '.pdf': ['PDF document', 'application/pdf'],
  '.zip': ['ZIP archive', 'application/zip'],
  '.gz': ['gzip archive', 'application/gzip'],
  '.xlsx': ['Excel workbook', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
  '.docx': ['Word document', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
};

/** `sample`: the first bytes of the file (a few KB is plenty). */
export function fileKind(name: string, sample: Uint8Array): FileKind {
  const ext = path.extname(name).toLowerCase();
  if (looksBinary(sample)) {
    const [label, mime] = BINARY_TYPES[ext] ?? sniffBinary(sample) ?? ['binary file', 'application/octet-stream'];
    return { kind: 'binary', label, mime };
  }
  const [label, mime] = TEXT_TYPES[ext] ?? ['text', 'text/plain'];
  return { kind: 'text', label, mime };
}

/** The type to announce before the bytes are read (attachments): from the name alone. */
export function mimeFromName(name: string): string | undefined {
  const ext = path.extname(name).toLowerCase();
  return TEXT_TYPES[ext]?.[1] ?? BINARY_TYPES[ext]?.[1];
}

function looksBinary(sample: Uint8Array): boolean {
  if (sample.includes(0)) return true;
  // A multi-byte character cut at the sample's end is not a reason to call the file binary.
  const cut = Math.max(0, sample.length - 4);
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample.subarray(0, trailingBoundary(sample, cut)));
    return false;
  } catch {
    return true;
  }
}

/** Index where the last (possibly incomplete) UTF-8 sequence starts, searched from `from`. */
function trailingBoundary(bytes: Uint8Array, from: number): number {
  for (let i = bytes.length - 1; i >= from; i--) {
    const b = bytes[i]!;
    if ((b & 0xc0) !== 0x80) return (b & 0x80) === 0 ? bytes.length : i;
  }
  return bytes.length;
}

function sniffBinary(sample: Uint8Array): [string, string] | undefined {
  const head = Buffer.from(sample.subarray(0, 8));
  if (head.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) return ['PNG image', 'image/png'];
  if (head.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff]))) return ['JPEG image', 'image/jpeg'];
  if (head.subarray(0, 4).toString('latin1') === '%PDF') return ['PDF document', 'application/pdf'];
  if (head.subarray(0, 2).equals(Buffer.from([0x50, 0x4b]))) return ['ZIP-based file', 'application/zip'];
  if (head.subarray(0, 2).equals(Buffer.from([0x1f, 0x8b]))) return ['gzip archive', 'application/gzip'];
  return undefined;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}
