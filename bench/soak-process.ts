import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { hermesGatewayRunner, type TurnRunner } from './hermes-runners.js';
import { loadPeers } from './peer-loader.js';
import { FINAL_ANSWER, LOOKUP_DESCRIPTION, lookupValue, TURN_PROMPT } from './step-script.js';
import { forceGc } from './stats.js';

/**
 * One runner of the memory soak, alone in its own process so no other runner's heap or loaded
 * modules blur its numbers: a fake model that answers at once (one model step per turn), `turns`
 * turns after a warm-up, and every `sampleEvery` turns a full GC and a sample of RSS and heap.
 * argv: runner name ('hermes-agent (gateway)' or a peer's name), turns, sampleEvery, warmup.
 */
/** heapMb: JS heap in use after a full GC; externalMb: memory outside it that V8 knows of (buffers). */
export interface SoakSample { turns: number; rssMb: number; heapMb: number; externalMb: number }
export type SoakMessage = { type: 'samples'; samples: SoakSample[]; seconds: number } | { type: 'error'; message: string };

const INSTRUCTIONS = 'You are a helpful assistant. Use the tools when asked.';
const MB = 2 ** 20;

async function main(): Promise<void> {
  const [name = '', turnsArg, everyArg, warmupArg] = process.argv.slice(2);
  const turns = Number(turnsArg);
  const every = Number(everyArg);
  const warmup = Number(warmupArg);
  const fake = await startFakeOpenAI({ handler: () => ({ text: FINAL_ANSWER }) });
  let runner: TurnRunner;
  if (name === 'hermes-agent (gateway)') {
    // Fifty users take thousands of turns a minute here: a pace HERMES_USER_RATE would rightly refuse.
    runner = await hermesGatewayRunner(fake.url, { HERMES_USER_RATE: '0' });
  } else {
    const peer = (await loadPeers(() => undefined)).find((p) => p.name === name);
    if (!peer) throw new Error(`peer ${name} is not installed`);
    const agent = await peer.create(fake.url, [{ name: 'lookup', description: LOOKUP_DESCRIPTION, argName: 'key', run: lookupValue }], INSTRUCTIONS);
    runner = { name, runTurn: async () => void (await agent.askFresh(TURN_PROMPT)), close: async () => {} };
  }
  for (let i = 0; i < warmup; i++) await runner.runTurn();
  const samples: SoakSample[] = [];
  const sample = (n: number) => {
    fake.requests.length = 0; // the fake keeps request bodies: not the runner's memory
    forceGc();
    const m = process.memoryUsage();
    samples.push({ turns: n, rssMb: m.rss / MB, heapMb: m.heapUsed / MB, externalMb: m.external / MB });
  };
  const t0 = performance.now();
  sample(0);
  for (let i = 1; i <= turns; i++) {
    await runner.runTurn();
    if (i % every === 0) sample(i);
  }
  const seconds = (performance.now() - t0) / 1000;
  await runner.close();
  await fake.close();
  process.send?.({ type: 'samples', samples, seconds } satisfies SoakMessage);
}

main()
  .then(() => process.exit(0))
  .catch((err: Error) => {
    process.send?.({ type: 'error', message: err.message } satisfies SoakMessage);
    process.exit(1);
  });
