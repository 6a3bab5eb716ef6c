import { readFile, statfs } from 'node:fs/promises';

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

/** The sandbox's in-memory scratch folders (tmpfs): what is written there is memory too. */
export const SCRATCH_MOUNTS = ['/tmp', '/dev/shm'];

/**
 * Bytes written to the sandbox's tmpfs scratch folders, read through a process inside its mount
 * namespace (bwrap's first child; bwrap itself stays in the host's). Tmpfs pages belong to no
 * process, so the PSS sum alone never sees them: without this, a run could hold its whole memory
 * limit in processes and the scratch folders on top. 0 while the sandbox is not set up yet.
 */
export async function scratchBytes(bwrapPid: number): Promise<number> {
  const [inside] = await childrenOf(bwrapPid);
  if (inside === undefined) return 0;
  let total = 0;
  for (const mount of SCRATCH_MOUNTS) {
    try {
      const st = await statfs(`/proc/${inside}/root${mount}`);
      total += (st.blocks - st.bfree) * st.bsize;
    } catch {
      // not mounted yet, or the run is ending
    }
  }
  return total;
}
