import { readFile } from 'node:fs/promises';

/**
 * Memory of a process and all its descendants, read from /proc. Per-process rlimits let each of
 * the 64 processes use the whole memory limit; this sum is what the sandbox's memory watch compares
 * with HERMES_CODE_MEMORY_MB. It sums PSS (proportional set size), not RSS: forked children share
 * their parent's pages, and RSS would count those once per child. Bounded: at most `maxProcesses`
 * entries are visited.
 */

async function childrenOf(pid: number): Promise<number[]> {
  try {
    const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8');
    return text.split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function pssBytes(pid: number): Promise<number> {
  try {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = /^Pss:\s+(\d+) kB/m.exec(rollup)?.[1];
    return Number(kb ?? 0) * 1024;
  } catch {
    return 0; // exited meanwhile
  }
}

export async function treeMemoryBytes(rootPid: number, maxProcesses = 512): Promise<number> {
  let total = 0;
  const queue = [rootPid];
  let seen = 0;
  while (queue.length && seen < maxProcesses) {
    const pid = queue.shift()!;
    seen += 1;
    total += await pssBytes(pid);
    queue.push(...(await childrenOf(pid)));
  }
  return total;
}
