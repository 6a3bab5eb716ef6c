import { formatBytes } from '../workspace/file-kind.js';

/**
 * What the model is told about a document it asked to read, in one place. The person hears about
 * a document only through the model's answer (read_file is the model's tool), so these are written
 * for the model: what happened, and what it can do instead.
 */
export const DOCUMENT_NOTES = {
  encrypted: (rel: string) =>
    `${rel} is a password-protected PDF; its text cannot be read without the password. Tell the user, and ask for an unprotected copy.`,
  corrupt: (rel: string, label: string) =>
    `${rel} could not be read as a ${label}: the file is damaged or not really a ${label}. Tell the user; run_code can look at its bytes if that helps.`,
  tooSlow: (rel: string, seconds: number) =>
    `Reading the text of ${rel} took longer than ${seconds} s and was stopped. The document is too large or complex to read here; ask the user for a smaller part or a text export.`,
  tooBig: (rel: string, bytes: number, max: number) =>
    `${rel} is ${formatBytes(bytes)}; documents over ${formatBytes(max)} are not read as text here. Ask the user for a smaller file or the pages that matter.`,
  tooMuchMemory: (rel: string) =>
    `Reading the text of ${rel} needed more memory than allowed and was stopped (the file may be built to expand enormously). Ask the user for a smaller file or a text export.`,
  pagesCut: (read: number, total: number) => `[only the first ${read} of ${total} pages were read; ask the user for the pages that matter]`,
  charsCut: (max: number) => `[the text stops here: documents are read up to ${max} characters]`,
  noText: '[no text found: the document may be scanned images only]',
} as const;
