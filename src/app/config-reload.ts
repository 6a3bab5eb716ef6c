import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { rereadConfigFile, type ConfigFile } from '../settings/config-file.js';
import type { PolicyBook } from '../settings/policy-book.js';
import { readPins, type Pins } from '../capabilities/mcp/pin-watch.js';

/**
 * Reloading hermes.config.yaml while the bot runs (SIGHUP, or a change of the file). The whole file
 * is validated as at start; an invalid one is rejected with one log line per problem and the config
 * in force stays, whole. A valid one replaces the channel policies at once (every door asks the
 * policy book when it acts, so the next model call, click or scheduled run sees it) and the MCP and
 * skill pins. Other sections (tools, agents, MCP servers themselves) are read at start only: a
 * change there is logged as needing a restart rather than half-applied.
 */

export type ReloadTrigger = 'signal' | 'file';

export type ReloadResult =
  | { ok: true; hash: string; changed: string[]; needsRestart: string[] }
  | { ok: false; errors: string[] }
  | { ok: true; hash: string; changed: []; needsRestart: []; unchanged: true };

export interface ConfigReloadDeps {
  file: string;
  /** The file as read at start (its sections are compared on each reload). */
  initial: ConfigFile | undefined;
  policies: PolicyBook;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** New pins for MCP servers and skills (absent when neither is configured). */
  onPins?(pins: Pins): void;
  /** Every reload attempt, for the audit record. */
  onReload?(event: { trigger: ReloadTrigger; result: ReloadResult; file: string }): void;
}

/** Sections applied without a restart. */
const LIVE = new Set(['channels']);

export function fileHash(file: string): string {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);
  } catch {
    return 'unreadable';
  }
}

export function createConfigReload(deps: ConfigReloadDeps) {
  let inForce: ConfigFile = deps.initial ?? {};
  let hash = fileHash(deps.file);
  const { log } = deps;

  function pins(): void {
    if (!deps.onPins) return;
    try {
      deps.onPins(readPins(deps.file));
    } catch (err) {
      log.warn({ file: deps.file, err: (err as Error).message.split('\n')[0] }, 'config file changed but could not be read: the pins in force stay');
    }
  }

  return {
    /** Reads the file again and applies what may change while running. Never throws. */
    reload(trigger: ReloadTrigger): ReloadResult {
      // Pins keep their own reading (only their sections), as before the reload existed.
      pins();
      const read = rereadConfigFile(deps.file);
      let result: ReloadResult;
      if (!read.ok) {
        result = { ok: false, errors: read.errors };
        log.error({ file: deps.file, trigger, errors: read.errors }, `config reload rejected, the config in force stays: ${read.errors[0]}${read.errors.length > 1 ? ` (and ${read.errors.length - 1} more)` : ''}`);
      } else {
        const next = read.file;
        const sections = [...new Set([...Object.keys(inForce), ...Object.keys(next)])];
        const changed = sections.filter((k) => JSON.stringify(inForce[k as keyof ConfigFile] ?? null) !== JSON.stringify(next[k as keyof ConfigFile] ?? null));
        // Pins are applied live; a changed server otherwise needs a restart.
        const needsRestart = changed.filter((k) => !LIVE.has(k) && !(k === 'skills') && !(k === 'mcp_servers' && onlyPinsDiffer(inForce.mcp_servers, next.mcp_servers)));
        deps.policies.replace(next.channels ?? {});
        inForce = next;
        hash = fileHash(deps.file);
        result = changed.length ? { ok: true, hash, changed, needsRestart } : { ok: true, hash, changed: [], needsRestart: [], unchanged: true };
        log.info({ file: deps.file, trigger, hash, changed, policies: Object.keys(next.channels ?? {}) }, changed.length ? 'config reloaded' : 'config reloaded: nothing changed');
        if (needsRestart.length) log.warn({ sections: needsRestart }, `config reload: ${needsRestart.join(', ')} changed, which takes effect only after a restart`);
      }
      deps.onReload?.({ trigger, result, file: deps.file });
      return result;
    },
    hash: () => hash,
  };
}

function onlyPinsDiffer(a: ConfigFile['mcp_servers'], b: ConfigFile['mcp_servers']): boolean {
  const strip = (s: ConfigFile['mcp_servers']) => JSON.stringify(Object.fromEntries(Object.entries(s ?? {}).map(([k, v]) => [k, { ...v, pin: undefined }])));
  return strip(a) === strip(b);
}
