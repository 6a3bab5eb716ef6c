import pino from 'pino';
import { createNetClient, type LookupFn } from '../../src/capabilities/net/safe-fetch.js';
import type { ToolContext } from '../../src/capabilities/toolkit/tool-api.js';
import { makeToolContext } from '../tools/context-helper.js';

export const silentLog = pino({ level: 'silent' });

/** A lookup for fake names that records every name it was asked about. */
export function fakeLookup(table: Record<string, string[]>): LookupFn & { asked: string[] } {
  const asked: string[] = [];
  const fn = async (host: string) => {
    asked.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
  };
  return Object.assign(fn, { asked });
}

/** A tool context whose net is the real safe client. */
export function netContext(opts: { allow?: string[]; lookup?: LookupFn; settings?: Record<string, unknown>; timeoutMs?: number; signal?: AbortSignal }): ToolContext {
  const net = createNetClient({
    allow: opts.allow ?? [],
    log: silentLog,
    // Offline tests: an unknown name must fail fast instead of asking a real resolver.
    lookup: opts.lookup ?? fakeLookup({}),
    defaultTimeoutMs: opts.timeoutMs ?? 5_000,
  });
  return makeToolContext({ net, settings: opts.settings ?? {}, ...(opts.signal ? { signal: opts.signal } : {}) });
}
