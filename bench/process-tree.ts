import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/**
 * Resident memory of the processes under a parent, read from Linux /proc. The footprint goal
 * counts what `npm start` runs, not npm itself: the node processes below the npm process (a shell
 * between them is neither node nor counted).
 */
export interface TreeProcess { pid: number; name: string; rssMb: number }

const MAX_PROCESSES = 10_000;

function parentOf(pid: number): number | undefined {
  try {
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function rssMb(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** Every live descendant of `root` (not `root` itself), with its executable's name and RSS. */
export function descendants(root: number): TreeProcess[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').slice(0, MAX_PROCESSES)) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const parent = parentOf(pid);
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  const out: TreeProcess[] = [];
  const queue = [...(children.get(root) ?? [])];
  while (queue.length && out.length < MAX_PROCESSES) {
    const pid = queue.shift()!;
    queue.push(...(children.get(pid) ?? []));
    let name = '?';
    try {
      name = path.basename(readlinkSync(`/proc/${pid}/exe`));
    } catch {
      // exited meanwhile, or not ours to read
    }
    const rss = rssMb(pid);
    if (rss !== undefined) out.push({ pid, name, rssMb: rss });
  }
  return out;
}

/** Summed RSS (MB) of the node processes under `root`, or undefined where /proc is not there. */
export function nodeTreeRssMb(root: number): { totalMb: number; processes: TreeProcess[] } | undefined {
  if (process.platform !== 'linux') return undefined;
  const processes = descendants(root).filter((p) => p.name === 'node' || p.name === path.basename(process.execPath));
  return { totalMb: processes.reduce((s, p) => s + p.rssMb, 0), processes };
}
