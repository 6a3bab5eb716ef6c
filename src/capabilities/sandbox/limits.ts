import type { Config } from '../../settings/config.js';
import type { SandboxLimits } from './bwrap-args.js';

const MB = 1024 * 1024;
/** Processes (threads count too) one run may have at once. */
export const MAX_PROCESSES = 64;
/** Size of the fresh /tmp of each run (it lives in memory). */
export const TMP_MB = 64;

/** The sandbox's limits from the settings; cpuSeconds is set per run from its timeout. */
export function sandboxLimits(files: Config['files']): SandboxLimits {
  return {
    memoryBytes: files.codeMemoryMb * MB,
    maxProcesses: MAX_PROCESSES,
    // No single file may be larger than the whole workspace may be.
    maxFileBytes: files.workspaceMb * MB,
    cpuSeconds: Math.ceil(files.codeTimeoutMs / 1000) + 1,
    tmpBytes: TMP_MB * MB,
  };
}

export function workspaceLimits(files: Config['files']): { quotaBytes: number; maxFileBytes: number } {
  return { quotaBytes: files.workspaceMb * MB, maxFileBytes: files.maxFileMb * MB };
}
