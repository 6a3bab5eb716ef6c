import { unwatchFile, watchFile } from 'node:fs';

/**
 * The one watch on the config file: stat polling, which also works on bind mounts and with editors
 * that replace the file rather than write into it. `onChange` runs when the modification time
 * moves (a re-pin, an edited channel policy); what to re-read is the caller's business.
 */
export function watchConfigFile(file: string, opts: { intervalMs?: number; onChange(): void }): () => void {
  const listener = (cur: { mtimeMs: number }, prev: { mtimeMs: number }) => {
    if (cur.mtimeMs !== prev.mtimeMs) opts.onChange();
  };
  watchFile(file, { interval: opts.intervalMs ?? 1000, persistent: false }, listener);
  return () => unwatchFile(file, listener);
}
