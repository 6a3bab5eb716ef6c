import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_DIR } from './peer-loader.js';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  node: string;
  platform: string;
  /** 1/5/15-minute load averages at the start: other work on the machine skews every number. */
  loadAverageAtStart: number[];
}

export function describeMachine(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

const PEER_PACKAGES = ['@openai/agents', 'ai', '@ai-sdk/openai', 'langchain', '@langchain/core', '@langchain/openai', '@langchain/langgraph', 'openai', 'zod'];

export function describeVersions(): { hermes: string; hermesOpenaiSdk: string | undefined; peers: Record<string, string> } {
  const pkg = JSON.parse(readFileSync(path.join(BENCH_DIR, '..', 'package.json'), 'utf8')) as { version: string };
  const peers: Record<string, string> = {};
  for (const name of PEER_PACKAGES) {
    const file = path.join(BENCH_DIR, 'node_modules', name, 'package.json');
    try {
      peers[name] = (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    } catch {
      // not installed: the peers section is skipped and says so
    }
  }
  return { hermes: pkg.version, hermesOpenaiSdk: readRootVersion('openai'), peers };
}

function readRootVersion(name: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(path.join(BENCH_DIR, '..', 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return undefined;
  }
}
