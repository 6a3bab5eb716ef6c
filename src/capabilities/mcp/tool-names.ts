import { createHash } from 'node:crypto';
import { canonicalJson } from '../../state/approvals/approval-store.js';

/**
 * How MCP tools are named for the model, matched against operator patterns, and fingerprinted for
 * pins. Pure functions: the hub and the CLI must agree on every one of them.
 */

export const MCP_PREFIX = 'mcp__';
const MAX_NAME = 64;

/**
 * `mcp__<server>__<tool>`, with anything outside `[A-Za-z0-9_-]` turned into `_`. A name longer
 * than 64 characters (the model APIs' limit) keeps its start and ends in a hash of the full name,
 * so it stays the same across restarts and two long names never collide by truncation alone.
 */
export function mcpToolName(server: string, tool: string): string {
  const exact = `${MCP_PREFIX}${server}__${tool}`;
  const clean = `${MCP_PREFIX}${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (clean === exact && clean.length <= MAX_NAME) return clean;
  // A replaced character could make two names equal ("a.b" and "a_b"): the hash keeps them apart.
  return `${clean.slice(0, MAX_NAME - 9)}_${shortHash(exact)}`;
}

function shortHash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 8);
}

/** `*` matches any run of characters; everything else is literal. Matched against the server's own tool name. */
export function globMatches(pattern: string, name: string): boolean {
  const re = new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`);
  return re.test(name);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Deny wins over allow; no allow list means every tool not denied. */
export function toolAllowed(filter: { allow?: readonly string[]; deny?: readonly string[] }, name: string): boolean {
  if (filter.deny?.some((p) => globMatches(p, name))) return false;
  if (filter.allow === undefined) return true;
  return filter.allow.some((p) => globMatches(p, name));
}

/** What a pin covers of one tool: everything the model or the approval rule reads. */
export interface PinnedShape {
  name: string;
  description?: string;
  inputSchema?: unknown;
  annotations?: unknown;
}

/** sha256 of the canonical JSON of a tool's definition, base64url (43 characters). */
export function definitionHash(tool: PinnedShape): string {
  const shape = { name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema ?? null, annotations: tool.annotations ?? null };
  return createHash('sha256').update(canonicalJson(shape)).digest('base64url');
}
