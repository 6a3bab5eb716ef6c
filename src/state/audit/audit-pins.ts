import { hashArgs } from '../approvals/approval-store.js';
import type { AuditLog } from './audit-log.js';

/** The pins read from the config file (the shape of capabilities/mcp/pin-watch.ts's Pins). */
export interface PinSet {
  servers: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
  skills: Readonly<Record<string, string>>;
}

type PinChange = { what: 'mcp_server' | 'skill'; name: string; outcome: 'pinned' | 'unpinned' | 'repinned'; before?: string; after?: string };

/** A server's pin is a map of tool hashes; one hash of it says whether it changed. */
const fingerprint = (pin: Readonly<Record<string, string>> | undefined) => (pin === undefined ? undefined : hashArgs(pin).slice(0, 16));

function changesBetween(before: PinSet, after: PinSet): PinChange[] {
  const out: PinChange[] = [];
  const compare = (what: PinChange['what'], name: string, a: string | undefined, b: string | undefined) => {
    if (a === b) return;
    out.push({ what, name, outcome: a === undefined ? 'pinned' : b === undefined ? 'unpinned' : 'repinned', ...(a !== undefined && { before: a }), ...(b !== undefined && { after: b }) });
  };
  for (const name of new Set([...before.servers.keys(), ...after.servers.keys()])) compare('mcp_server', name, fingerprint(before.servers.get(name)), fingerprint(after.servers.get(name)));
  for (const name of new Set([...Object.keys(before.skills), ...Object.keys(after.skills)])) compare('skill', name, before.skills[name], after.skills[name]);
  return out;
}

/**
 * Records each MCP server or skill whose pin changed in the config file (by `npm run mcp -- pin`
 * or by hand; the CLI cannot write the audit itself while the bot holds the store). Returns the
 * function the pin watcher calls with each newly read set.
 */
export function auditPinChanges(audit: Pick<AuditLog, 'record'>, initial: PinSet): (pins: PinSet) => Promise<void> {
  let current = initial;
  return async (pins) => {
    const changes = changesBetween(current, pins);
    current = pins;
    for (const c of changes) {
      await audit.record({ kind: 'mcp_pin', outcome: c.outcome, tool: c.name, detail: { [c.what]: c.name, ...(c.before && { before: c.before }), ...(c.after && { after: c.after }) } });
    }
  };
}
