import { lstat, opendir, readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * A bounded walk of a workspace: every listing, usage sum and before/after snapshot uses it. It
 * never follows symlinks (a link is reported as a link, its target is not visited), and it stops
 * after `maxEntries`, saying so, because code in the sandbox can create any number of files.
 */

export interface WalkEntry {
  /** Workspace-relative, '/'-separated. */
  rel: string;
  type: 'file' | 'dir' | 'link' | 'other';
  size: number;
  mtimeMs: number;
  uid: number;
}

export interface WalkResult {
  entries: WalkEntry[];
  /** True when the walk stopped at maxEntries. */
  truncated: boolean;
}

export const WALK_MAX_ENTRIES = 20_000;

export async function walk(root: string, opts: { maxEntries?: number; from?: string; maxDepth?: number } = {}): Promise<WalkResult> {
  const max = opts.maxEntries ?? WALK_MAX_ENTRIES;
  const maxDepth = opts.maxDepth ?? 64;
  const entries: WalkEntry[] = [];
  const queue: Array<{ rel: string; depth: number }> = [{ rel: opts.from ?? '', depth: 0 }];
  while (queue.length) {
    const { rel, depth } = queue.shift()!;
    let names: string[];
    try {
      names = (await readdir(path.join(root, rel))).sort();
    } catch {
      continue; // removed while walking, or not a folder
    }
    for (const name of names) {
      if (entries.length >= max) return { entries, truncated: true };
      const childRel = rel ? `${rel}/${name}` : name;
      let st;
      try {
        st = await lstat(path.join(root, childRel));
      } catch {
        continue;
      }
      const type = st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
      entries.push({ rel: childRel, type, size: type === 'file' ? st.size : 0, mtimeMs: st.mtimeMs, uid: st.uid });
      if (type === 'dir' && depth + 1 < maxDepth) queue.push({ rel: childRel, depth: depth + 1 });
    }
  }
  return { entries, truncated: false };
}

export function totalBytes(result: WalkResult): number {
  return result.entries.reduce((sum, e) => sum + e.size, 0);
}

/** Files created, changed (size or mtime) and deleted between two walks. */
export function diffWalks(before: WalkResult, after: WalkResult): { created: string[]; changed: string[]; deleted: string[] } {
  const old = new Map(before.entries.filter((e) => e.type !== 'dir').map((e) => [e.rel, e]));
  const created: string[] = [];
  const changed: string[] = [];
  for (const e of after.entries) {
    if (e.type === 'dir') continue;
    const prev = old.get(e.rel);
    if (!prev) created.push(e.rel);
    else if (prev.size !== e.size || prev.mtimeMs !== e.mtimeMs || prev.type !== e.type) changed.push(e.rel);
    old.delete(e.rel);
  }
  return { created, changed, deleted: [...old.keys()] };
}

/** What a workspace holds, counted by `measureUsage`. */
export interface WorkspaceUsage {
  /** Bytes of all regular files (a lower bound when `complete` is false). */
  bytes: number;
  /** Files, folders, links and other entries (maxEntries + 1 when the scan stopped there). */
  entries: number;
  /** False when the scan stopped past maxEntries or could not read part of the tree. */
  complete: boolean;
}

/**
 * The exact size and entry count of a tree, for the quota. Unlike `walk` it keeps no entries and
 * has no depth limit: an earlier scan stopped at 20,000 entries and summed only those, so 20,001
 * empty files hid megabytes behind them. It stops only once the count passes `maxEntries` (the
 * workspace is then over its entry cap, which is answer enough) and reads folders as streams, so
 * one folder with a million names costs no more than the cap.
 */
export async function measureUsage(root: string, maxEntries: number): Promise<WorkspaceUsage> {
  const usage: WorkspaceUsage = { bytes: 0, entries: 0, complete: true };
  const queue: string[] = [root];
  while (queue.length) {
    const folder = queue.shift()!;
    let handle;
    try {
      handle = await opendir(folder, { bufferSize: 256 });
    } catch (err) {
      if (!isGone(err)) usage.complete = false;
      continue;
    }
    try {
      for await (const dirent of handle) {
        usage.entries += 1;
        if (usage.entries > maxEntries) return { ...usage, complete: false };
        const abs = path.join(folder, dirent.name);
        if (dirent.isDirectory()) queue.push(abs);
        else if (dirent.isFile()) {
          try {
            usage.bytes += (await lstat(abs)).size;
          } catch (err) {
            if (!isGone(err)) usage.complete = false;
          }
        }
      }
    } catch (err) {
      if (!isGone(err)) usage.complete = false;
    }
  }
  return usage;
}

function isGone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
