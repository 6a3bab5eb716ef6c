import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PeerModule } from './peers/peer-api.js';

/**
 * Peers live in bench/node_modules (installed once with `npm --prefix bench install`), never in
 * the app's own dependencies. Modules are imported by computed URL so the app's typecheck does
 * not follow them; `npx tsc -p bench` checks them when they are installed.
 */
export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const PEER_FILES = ['openai-agents', 'ai-sdk', 'langchain', 'langgraph-react'];

export function peersInstalled(): boolean {
  return existsSync(path.join(BENCH_DIR, 'node_modules', '@openai', 'agents', 'package.json'));
}

export const PEER_INSTALL_HINT = 'Peer frameworks are not installed: run `npm --prefix bench install` once, then `npm run bench` again. Running the hermes-only parts now.';

export async function loadPeers(onError: (name: string, err: Error) => void): Promise<PeerModule[]> {
  if (!peersInstalled()) return [];
  const out: PeerModule[] = [];
  for (const file of PEER_FILES) {
    try {
      const mod = (await import(new URL(`./peers/${file}.ts`, import.meta.url).href)) as { peer: PeerModule };
      out.push(mod.peer);
    } catch (err) {
      onError(file, err as Error);
    }
  }
  return out;
}

/** Installed version of a package, from bench/node_modules first, then the app's node_modules. */
export function packageVersion(name: string): string | undefined {
  for (const base of [path.join(BENCH_DIR, 'node_modules'), path.join(BENCH_DIR, '..', 'node_modules')]) {
    const file = path.join(base, name, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version;
  }
  return undefined;
}
