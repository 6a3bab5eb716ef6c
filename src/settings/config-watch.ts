import { unwatchFile, watchFile } from 'node:fs';

/**
 * The one watch on the config file: stat polling, which also works on bind mounts and with editors
 * that replace the file rather than write into it. `onChange` runs once the modification time has
 * moved and then stayed put for `settleMs` (a re-pin, an edited channel policy): a file still being
 * written is not read half-way. What to re-read is the caller's business.
 */
export function watchConfigFile(file: string, opts: { intervalMs?: number; settleMs?: number; onChange(): void }): () => void {
  const intervalMs = opts.intervalMs ?? 1000;
  const settleMs = opts.settleMs ?? Math.min(intervalMs, 250);
  let pending: ReturnType<typeof setTimeout> | undefined;
  const listener = (cur: { mtimeMs: number }, prev: { mtimeMs: number }) => {
    if (cur.mtimeMs === prev.mtimeMs) return;
    // Each further change starts the wait again.
    if (pending) clearTimeout(pending);
    pending = setTimeout(() => {
      pending = undefined;
      opts.onChange();
    }, settleMs);
    pending.unref?.();
  };
  watchFile(file, { interval: intervalMs, persistent: false }, listener);
  return () => {
    if (pending) clearTimeout(pending);
    unwatchFile(file, listener);
  };
}
