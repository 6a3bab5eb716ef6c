import { constants } from 'node:fs';
import { access, lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { Language, SystemLayout } from './bwrap-args.js';

/**
 * What this host offers the sandbox: where bwrap and prlimit are, which top-level system folders are
 * real folders and which are merged-/usr symlinks, and where each interpreter lives. Found once at
 * start; a language whose interpreter is missing is reported by the probe, not guessed at run time.
 */

const SYSTEM_TOP = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
const ETC = ['/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime'];
/** The sandbox's PATH, in order; interpreters are looked up only here. */
const SANDBOX_BIN = ['/usr/local/bin', '/usr/bin', '/bin'];
/** Where node's binary is shown when it lives outside the system folders (nvm, a tarball). */
const NODE_INSIDE = '/opt/hermes/node';

export async function findOnPath(name: string, searchPath = process.env.PATH ?? ''): Promise<string | undefined> {
  for (const dir of searchPath.split(':').filter(Boolean)) {
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

async function isExecutable(p: string): Promise<boolean> {
  try {
    await access(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

export async function discoverLayout(opts: { bwrap?: string; nodePath?: string; searchPath?: string } = {}): Promise<{ layout?: SystemLayout; missing: string[] }> {
  const missing: string[] = [];
  const bwrap = opts.bwrap ?? (await findOnPath('bwrap', opts.searchPath));
  const prlimit = (await findOnPath('prlimit', SANDBOX_BIN.join(':'))) ?? undefined;
  if (!bwrap) missing.push('bwrap');
  if (!prlimit) missing.push('prlimit');
  if (!bwrap || !prlimit) return { missing };

  const roDirs = ['/usr'];
  const links: SystemLayout['links'] = [];
  for (const top of SYSTEM_TOP) {
    try {
      const st = await lstat(top);
      if (st.isSymbolicLink()) links.push({ path: top, target: await readlink(top) });
      else if (st.isDirectory()) roDirs.push(top);
    } catch {
      /* not on this host */
    }
  }
  const etc: string[] = [];
  for (const entry of ETC) if (await exists(entry)) etc.push(entry);

  const interpreters: SystemLayout['interpreters'] = {};
  const extraBinds: SystemLayout['extraBinds'] = [];
  const python = await findOnPath('python3', SANDBOX_BIN.join(':'));
  if (python) interpreters.python = python;
  const bash = await findOnPath('bash', SANDBOX_BIN.join(':'));
  if (bash) interpreters.bash = bash;
  // The same node that runs the bot, so JavaScript behaves as the operator expects.
  const node = await realpath(opts.nodePath ?? process.execPath);
  if (roDirs.some((d) => node.startsWith(`${d}/`))) interpreters.javascript = node;
  else {
    extraBinds.push({ host: node, inside: NODE_INSIDE });
    interpreters.javascript = NODE_INSIDE;
  }
  return { layout: { bwrap, prlimit, roDirs, links, etc, interpreters, extraBinds }, missing };
}

export function languagesOf(layout: SystemLayout): Language[] {
  return (['python', 'javascript', 'bash'] as const).filter((l) => layout.interpreters[l] !== undefined);
}
