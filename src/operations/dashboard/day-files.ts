import { open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * The tracer's day files (`2026-12-01.jsonl`) on disk, read by byte range for trace-index.ts. A file
 * may be pruned between a listing and a read: the reads that can meet that say so (undefined)
 * instead of throwing.
 */

const DAY_FILE = /^\d{4}-\d{2}-\d{2}\.jsonl$/;

/** The day files in `dir`, oldest first; none when the folder does not exist yet. */
export async function listDayFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => DAY_FILE.test(f)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

export async function sizeOf(dir: string, name: string): Promise<number | undefined> {
  try {
    return (await stat(path.join(dir, name))).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // pruned while we looked
    throw err;
  }
}

/** Bytes [from, to) of a file into `buf` (as many as are there), or undefined if the file is gone. */
export async function readRange(dir: string, name: string, from: number, to: number, buf: Buffer): Promise<number | undefined> {
  let handle;
  try {
    handle = await open(path.join(dir, name), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // pruned while we looked
    throw err;
  }
  try {
    let got = 0;
    while (got < to - from) {
      const { bytesRead } = await handle.read(buf, got, to - from - got, from + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return got;
  } finally {
    await handle.close();
  }
}

/**
 * Bytes [from, to) of a file, one buffer's worth at a time: `lines(buf, length, at)` takes the
 * complete lines of buf[0, length), which starts at byte `at`, and returns how far they reached.
 * The unfinished line is moved to the buffer's front (the buffer grows when one line is longer):
 * fresh multi-megabyte buffers per chunk cost more in page faults than the parsing on a busy
 * machine. Returns how far complete lines reached.
 */
export async function readPiecewise(dir: string, name: string, from: number, to: number, buf: Buffer, lines: (buf: Buffer, length: number, at: number) => number): Promise<number> {
  const handle = await open(path.join(dir, name), 'r');
  try {
    let carried = 0;
    let carryAt = from;
    let pos = from;
    while (pos < to) {
      if (carried === buf.length) {
        // One line longer than the buffer: grow it.
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, carried);
        buf = bigger;
      }
      const { bytesRead } = await handle.read(buf, carried, Math.min(buf.length - carried, to - pos), pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      const filled = carried + bytesRead;
      const start = lines(buf, filled, carryAt) - carryAt;
      buf.copyWithin(0, start, filled);
      carried = filled - start;
      carryAt += start;
    }
    return carryAt;
  } finally {
    await handle.close();
  }
}

/** The lines at `refs` (offset, length pairs) of a file, as text; undefined if the file is gone. */
export async function readLinesAt(dir: string, name: string, refs: readonly number[]): Promise<string[] | undefined> {
  let handle;
  try {
    handle = await open(path.join(dir, name), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const out: string[] = [];
    for (let i = 0; i < refs.length; i += 2) {
      const length = refs[i + 1]!;
      const buf = Buffer.allocUnsafe(length);
      const { bytesRead } = await handle.read(buf, 0, length, refs[i]!);
      out.push(buf.toString('utf8', 0, bytesRead));
    }
    return out;
  } finally {
    await handle.close();
  }
}
