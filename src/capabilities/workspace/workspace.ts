import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { checkOpenedInside, resolveInside, type ResolvedPath } from './resolve-path.js';
import { fileKind, formatBytes, type FileKind } from './file-kind.js';
import { measureUsage, walk, type WalkEntry, type WorkspaceUsage } from './walk.js';
import { entriesWords } from './quota-text.js';
import { documentKind, type DocumentKind } from '../documents/document-text.js';

/**
 * One folder per session, under HERMES_WORKSPACE_DIR. `/hermes new` starts a new session and so a
 * new folder; the old folder stays on disk with the archived session (nothing deletes it: an
 * operator removes old folders by age, see docs/files-and-code.md). The folder is created on
 * first use. Paths are always workspace-relative and checked by resolve-path.ts.
 */

/** Where incoming files are saved; their text is outside text when read. */
export const ATTACHMENTS_DIR = 'attachments';
/** Where the full output of a run_code call goes when the model saw only head and tail. */
export const OUTPUTS_DIR = 'outputs';

export interface WorkspaceLimits {
  /** HERMES_WORKSPACE_MB in bytes. */
  quotaBytes: number;
  /** HERMES_MAX_FILE_MB in bytes: the largest file taken in or sent out. */
  maxFileBytes: number;
  /** Files and folders the workspace may hold; default WORKSPACE_MAX_ENTRIES. */
  maxEntries?: number;
}

/**
 * Files and folders one workspace may hold. The cap keeps the exact usage count (every write
 * counts the whole tree) cheap and bounded, whatever code in the sandbox creates.
 */
export const WORKSPACE_MAX_ENTRIES = 10_000;

export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
  /** Set for the limits a caller may want to tell a person about in its own words. */
  constructor(message: string, readonly limit?: 'file_size' | 'quota') {
    super(message);
  }
}

export type ReadOutcome =
  | { kind: 'text'; rel: string; file: FileKind; bytes: number; totalChars: number; offset: number; text: string }
  | { kind: 'binary'; rel: string; file: FileKind; bytes: number }
  /** A PDF or Word document (by its bytes), handed over whole for text extraction. */
  | { kind: 'document'; rel: string; document: DocumentKind; bytes: number; data: Buffer };

export interface SessionWorkspace {
  /** Absolute host path of the folder (it may not exist yet: see ensure). */
  readonly root: string;
  readonly limits: Required<WorkspaceLimits>;
  ensure(): Promise<string>;
  resolve(rel: string): Promise<ResolvedPath>;
  list(rel?: string, maxEntries?: number): Promise<{ entries: WalkEntry[]; truncated: boolean }>;
  /** Exact bytes and entries (see measureUsage); `complete` is false past the entry cap. */
  usage(): Promise<WorkspaceUsage>;
  read(rel: string, opts: { offset: number; maxChars: number }): Promise<ReadOutcome>;
  /** Whole file as bytes, for send_file (refuses more than maxBytes). */
  readBytes(rel: string, maxBytes: number): Promise<{ rel: string; data: Buffer }>;
  write(rel: string, content: string | Uint8Array): Promise<{ rel: string; bytes: number; created: boolean }>;
  /** Writes a stream to a new file, stopping (and deleting it) past maxBytes or the quota. */
  writeStream(rel: string, chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<{ rel: string; bytes: number }>;
  isAttachment(rel: string): boolean;
}

const MAX_READ_BYTES = 64 * 1024 * 1024;

/**
 * Why the file tools touch nothing but regular files and folders: a blocking open of a named pipe
 * waits for a writer that never comes, on one of libuv's four threads; four such reads (code in the
 * sandbox can mkfifo) stopped every file read and DNS lookup of the whole bot. So the kind is checked
 * with lstat before opening, every open is O_NONBLOCK (no effect on regular files), and the opened
 * descriptor is checked again, in case something was swapped in between.
 */
const OPEN_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const OPEN_WRITE = constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function specialKind(st: Stats): string | undefined {
  if (st.isFile() || st.isDirectory() || st.isSymbolicLink()) return undefined;
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'a special file';
}

function notRegular(rel: string, kind: string): WorkspaceError {
  return new WorkspaceError(`"${rel}" is ${kind}, not a regular file; the file tools only read and write regular files`);
}

/** Refuses a path that is (now) a pipe, socket or device, before anything opens it. */
async function refuseSpecial(abs: string, rel: string): Promise<void> {
  let st: Stats;
  try {
    st = await lstat(abs);
  } catch {
    return; // missing: the open that follows says so in its own words
  }
  const kind = specialKind(st);
  if (kind) throw notRegular(rel, kind);
}
const SAMPLE_BYTES = 8 * 1024;

export function workspaceFolderName(sessionId: string): string {
  const readable = sessionId.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100);
  const hash = createHash('sha256').update(sessionId).digest('hex').slice(0, 10);
  return `${readable}-${hash}`;
}

export function createWorkspaces(opts: { dir: string; limits: WorkspaceLimits }): { dir: string; forSession(sessionId: string): SessionWorkspace } {
  return {
    dir: opts.dir,
    forSession: (sessionId) => openWorkspace(path.join(opts.dir, workspaceFolderName(sessionId)), opts.limits),
  };
}

export function openWorkspace(root: string, given: WorkspaceLimits): SessionWorkspace {
  const limits: Required<WorkspaceLimits> = { ...given, maxEntries: given.maxEntries ?? WORKSPACE_MAX_ENTRIES };
  const ensure = async () => {
    await mkdir(root, { recursive: true, mode: 0o755 });
    return root;
  };

  async function resolveOrThrow(rel: string): Promise<{ abs: string; rel: string }> {
    await ensure();
    const r = await resolveInside(root, rel);
    if (!r.ok) throw new WorkspaceError(r.reason);
    return r;
  }

  /** Opens an existing regular file inside the workspace, never through a link that leaves it. */
  async function openExisting(rel: string): Promise<{ fh: FileHandle; rel: string; size: number }> {
    const r = await resolveOrThrow(rel);
    await refuseSpecial(r.abs, r.rel);
    let fh: FileHandle;
    try {
      fh = await open(r.abs, OPEN_READ);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new WorkspaceError(`there is no file "${r.rel}" in the workspace (list_files shows what is there)`);
      if (code === 'ELOOP') throw new WorkspaceError(`"${r.rel}" is a symbolic link; name the file itself`);
      throw err;
    }
    try {
      if (!(await checkOpenedInside(root, fh.fd))) throw new WorkspaceError(`"${r.rel}" points outside the workspace`);
      const st = await fh.stat();
      if (st.isDirectory()) throw new WorkspaceError(`"${r.rel || '.'}" is a folder; use list_files to see what is in it`);
      if (!st.isFile()) throw notRegular(r.rel, specialKind(st) ?? 'a special file');
      return { fh, rel: r.rel, size: st.size };
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  async function usage(): Promise<WorkspaceUsage> {
    await ensure();
    return measureUsage(root, limits.maxEntries);
  }

  /**
   * The exact usage, counted with the file being written already in it (openForWrite created it),
   * or a refusal when that makes too many entries or the tree cannot be counted in full.
   */
  async function countedRoom(rel: string): Promise<WorkspaceUsage> {
    const used = await usage();
    if (used.entries > limits.maxEntries) {
      throw new WorkspaceError(`writing "${rel}" would take the workspace over its limit of ${entriesWords(limits.maxEntries)}; delete files first`, 'quota');
    }
    if (!used.complete) throw new WorkspaceError(`part of the workspace cannot be read, so its size cannot be counted; nothing more can be written until that folder is removed`, 'quota');
    return used;
  }

  async function roomFor(rel: string, newBytes: number, replacing: number): Promise<void> {
    const used = (await countedRoom(rel)).bytes;
    if (used - replacing + newBytes > limits.quotaBytes) {
      throw new WorkspaceError(
        `writing "${rel}" (${formatBytes(newBytes)}) would take the workspace over its quota of ${formatBytes(limits.quotaBytes)} (${formatBytes(used)} used); delete files first`,
        'quota',
      );
    }
  }

  /** Creates or truncates a file inside, checking the opened descriptor before any byte is written. */
  async function openForWrite(rel: string): Promise<{ fh: FileHandle; rel: string; abs: string; existed: number | undefined }> {
    const r = await resolveOrThrow(rel);
    if (r.rel === '') throw new WorkspaceError('name a file, not the workspace itself');
    await mkdir(path.dirname(r.abs), { recursive: true });
    const again = await resolveInside(root, r.rel);
    if (!again.ok) throw new WorkspaceError(again.reason);
    await refuseSpecial(again.abs, again.rel);
    let existed: number | undefined;
    let fh: FileHandle;
    try {
      fh = await open(again.abs, OPEN_WRITE);
      const st = await fh.stat();
      if (!st.isFile()) {
        await fh.close();
        throw st.isDirectory() ? new WorkspaceError(`"${r.rel}" is a folder`) : notRegular(again.rel, specialKind(st) ?? 'a special file');
      }
      existed = st.size;
    } catch (err) {
      if (err instanceof WorkspaceError) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw new WorkspaceError(`"${r.rel}" is a symbolic link; write to a plain file name`);
      if (code === 'EISDIR') throw new WorkspaceError(`"${r.rel}" is a folder`);
      if (code !== 'ENOENT') throw err;
      fh = await open(again.abs, OPEN_WRITE | constants.O_CREAT | constants.O_EXCL, 0o644);
    }
    if (!(await checkOpenedInside(root, fh.fd))) {
      await fh.close();
      throw new WorkspaceError(`"${r.rel}" points outside the workspace`);
    }
    return { fh, rel: again.rel, abs: again.abs, existed };
  }

  return {
    root,
    limits,
    ensure,
    async resolve(rel) {
      await ensure();
      return resolveInside(root, rel);
    },

    async list(rel = '', maxEntries = 500) {
      const r = await resolveOrThrow(rel);
      return walk(root, { from: r.rel, maxEntries });
    },

    usage,

    async read(rel, { offset, maxChars }) {
      const { fh, rel: name, size } = await openExisting(rel);
      try {
        const sample = Buffer.alloc(Math.min(SAMPLE_BYTES, size));
        await fh.read(sample, 0, sample.length, 0);
        const document = documentKind(name, sample);
        if (document) {
          if (size > MAX_READ_BYTES) throw new WorkspaceError(`"${name}" is ${formatBytes(size)}, too large to read as a document here`);
          return { kind: 'document', rel: name, document, bytes: size, data: await fh.readFile() };
        }
        const file = fileKind(name, sample);
        if (file.kind === 'binary') return { kind: 'binary', rel: name, file, bytes: size };
        if (size > MAX_READ_BYTES) {
          throw new WorkspaceError(`"${name}" is ${formatBytes(size)}, too large to read as text here; use run_code to look at parts of it`);
        }
        const text = (await fh.readFile()).toString('utf8');
        const start = Math.min(Math.max(0, Math.floor(offset)), text.length);
        return { kind: 'text', rel: name, file, bytes: size, totalChars: text.length, offset: start, text: text.slice(start, start + maxChars) };
      } finally {
        await fh.close();
      }
    },

    async readBytes(rel, maxBytes) {
      const { fh, rel: name, size } = await openExisting(rel);
      try {
        if (size > maxBytes) throw new WorkspaceError(`"${name}" is ${formatBytes(size)}; files over ${formatBytes(maxBytes)} cannot be sent`);
        return { rel: name, data: await fh.readFile() };
      } finally {
        await fh.close();
      }
    },

    async write(rel, content) {
      const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : Buffer.from(content);
      const target = await openForWrite(rel);
      try {
        await roomFor(target.rel, data.length, target.existed ?? 0).catch(async (err: unknown) => {
          if (target.existed === undefined) await rm(target.abs, { force: true });
          throw err;
        });
        await target.fh.truncate(0);
        await target.fh.write(data, 0, data.length, 0);
        return { rel: target.rel, bytes: data.length, created: target.existed === undefined };
      } finally {
        await target.fh.close();
      }
    },

    async writeStream(rel, chunks, maxBytes) {
      const target = await openForWrite(rel);
      let bytes = 0;
      let ok = false;
      try {
        const room = limits.quotaBytes - (await countedRoom(target.rel)).bytes + (target.existed ?? 0);
        const cap = Math.min(maxBytes, room);
        await target.fh.truncate(0);
        for await (const chunk of chunks) {
          bytes += chunk.length;
          if (bytes > cap) {
            throw new WorkspaceError(
              cap < maxBytes
                ? `"${target.rel}" does not fit in the workspace quota of ${formatBytes(limits.quotaBytes)}`
                : `"${target.rel}" is larger than ${formatBytes(maxBytes)}`,
              cap < maxBytes ? 'quota' : 'file_size',
            );
          }
          await target.fh.write(chunk, 0, chunk.length, bytes - chunk.length);
        }
        ok = true;
        return { rel: target.rel, bytes };
      } finally {
        await target.fh.close();
        if (!ok) await rm(target.abs, { force: true });
      }
    },

    isAttachment: (rel) => rel === ATTACHMENTS_DIR || rel.startsWith(`${ATTACHMENTS_DIR}/`),
  };
}
