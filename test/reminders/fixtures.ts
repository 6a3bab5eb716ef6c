import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createSqliteStore } from '../../src/state/store/sqlite-store.js';
import type { Store } from '../../src/state/store/store.js';
import type { Conversation, Speaker } from '../../src/basics/types.js';

export const alice: Speaker = { platform: 'slack', workspaceId: 'T1', userId: 'UALICE', displayName: 'Alice' };
export const bob: Speaker = { platform: 'slack', workspaceId: 'T1', userId: 'UBOB', displayName: 'Bob' };

export const channel: Conversation = { platform: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: '1700000000.000100', isDm: false };
export const otherChannel: Conversation = { platform: 'slack', workspaceId: 'T1', channelId: 'C2', isDm: false };

/** A temp dir holding one SQLite file; `open` can be called again to simulate a restart. */
export async function tempStoreFile(): Promise<{ file: string; open: () => Promise<Store>; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hermes-reminders-'));
  const file = path.join(dir, 'hermes.sqlite');
  return {
    file,
    open: () => createSqliteStore({ file }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A logger that keeps its lines, so tests can check what the scheduler reported. */
export function memoryLogger(): { log: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void chunks.push(s) });
  return { log, lines: () => chunks.map((c) => JSON.parse(c) as Record<string, unknown>) };
}
