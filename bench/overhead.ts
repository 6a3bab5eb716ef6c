import OpenAI from 'openai';
import { startFakeOpenAI, type FakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { hermesGatewayRunner, hermesLoopRunner, type TurnRunner } from './hermes-runners.js';
import type { PeerModule } from './peers/peer-api.js';
import { FINAL_ANSWER, LOOKUP_DESCRIPTION, lookupValue, scriptedStep, STEPS_PER_TURN, TURN_PROMPT } from './step-script.js';
import { measureAllocation, measureTime, median, round, withDeadline } from './stats.js';

/**
 * Section 1: the same scripted 5-step turn (4 tool calls, then an answer) run by hermes-agent and
 * each peer against one fake OpenAI server with 0 ms latency, sequentially, in interleaved rounds
 * so JIT warm-up, GC pressure and machine noise hit every runner alike. A raw-SDK baseline (one
 * chat.completions call per step against the same fake) is measured in the same rounds and
 * subtracted: what remains is what the framework itself adds per step.
 */
export interface OverheadSizes {
  warmupTurns: number;
  rounds: number;
  turnsPerRound: number;
}

export interface OverheadRow {
  name: string;
  kind: 'hermes' | 'peer' | 'baseline';
  turns: number;
  wallMsPerStep: number;
  cpuMsPerStep: number;
  overheadWallMsPerStep: number;
  overheadCpuMsPerStep: number;
  heapKbPerTurn: number;
  /** Overhead per step relative to hermes-agent's full gateway path (peer ÷ hermes). */
  ratioToHermes?: number;
}

export interface OverheadResult {
  sizes: OverheadSizes;
  baselineNote: string;
  rows: OverheadRow[];
  errors: string[];
}

const INSTRUCTIONS = 'You are a helpful assistant. Use the tools when asked.';
const SECTION_DEADLINE_MS = 6 * 60_000;

function baselineRunner(fake: FakeOpenAI): TurnRunner {
  const client = new OpenAI({ apiKey: 'bench-key', baseURL: fake.url, maxRetries: 0, timeout: 30_000 });
  const tools = [{ type: 'function' as const, function: { name: 'lookup', description: LOOKUP_DESCRIPTION, parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] } } }];
  return {
    name: 'raw openai SDK (baseline)',
    async runTurn() {
      for (let i = 0; i < STEPS_PER_TURN; i++) {
        await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: TURN_PROMPT }], tools });
      }
    },
    close: async () => {},
  };
}

function peerRunner(peer: PeerModule, agent: Awaited<ReturnType<PeerModule['create']>>): TurnRunner {
  return {
    name: peer.name,
    async runTurn() {
      const text = await agent.askFresh(TURN_PROMPT);
      if (!text.includes(FINAL_ANSWER)) throw new Error(`${peer.name} answered something else: ${text.slice(0, 200)}`);
    },
    close: async () => {},
  };
}

interface Sample { wallMs: number; cpuMs: number; allocated: number; turns: number }

export async function runOverhead(sizes: OverheadSizes, peers: PeerModule[], log: (line: string) => void): Promise<OverheadResult> {
  const fake = await startFakeOpenAI({ handler: scriptedStep });
  const errors: string[] = [];
  const runners: Array<{ runner: TurnRunner; kind: OverheadRow['kind'] }> = [{ runner: baselineRunner(fake), kind: 'baseline' }];
  try {
    runners.push({ runner: await hermesGatewayRunner(fake.url), kind: 'hermes' });
    runners.push({ runner: await hermesLoopRunner(fake.url), kind: 'hermes' });
    const tool = { name: 'lookup', description: LOOKUP_DESCRIPTION, argName: 'key', run: lookupValue };
    for (const peer of peers) {
      try {
        runners.push({ runner: peerRunner(peer, await peer.create(fake.url, [tool], INSTRUCTIONS)), kind: 'peer' });
      } catch (err) {
        errors.push(`${peer.name}: could not start: ${(err as Error).message}`);
      }
    }

    const samples = new Map<TurnRunner, Sample[]>(runners.map((r) => [r.runner, []]));
    const broken = new Set<TurnRunner>();
    const batch = async (r: TurnRunner, turns: number, record: boolean) => {
      if (broken.has(r)) return;
      const before = fake.requests.length;
      try {
        const { result, allocatedBytes } = await measureAllocation(() =>
          measureTime(async () => {
            for (let i = 0; i < turns; i++) await r.runTurn();
          }),
        );
        const steps = fake.requests.length - before;
        if (steps !== turns * STEPS_PER_TURN) throw new Error(`made ${steps} model calls for ${turns} turns, expected ${turns * STEPS_PER_TURN}`);
        if (record) samples.get(r)!.push({ wallMs: result.wallMs, cpuMs: result.cpuMs, allocated: allocatedBytes, turns });
      } catch (err) {
        broken.add(r);
        errors.push(`${r.name}: ${(err as Error).message}`);
      }
    };

    await withDeadline('overhead bench', SECTION_DEADLINE_MS, async () => {
      for (const { runner } of runners) await batch(runner, sizes.warmupTurns, false);
      log(`overhead: warmed up ${runners.length} runners`);
      for (let round = 0; round < sizes.rounds; round++) {
        // Rotate the order every round so no runner always follows the same neighbour.
        const order = runners.map((_, i) => runners[(i + round) % runners.length]!);
        for (const { runner } of order) await batch(runner, sizes.turnsPerRound, true);
        // The fake keeps every request body; drop them so memory stays flat across rounds.
        fake.requests.length = 0;
      }
    });

    const perStep = (s: Sample[], f: (x: Sample) => number) => median(s.map((x) => f(x) / (x.turns * STEPS_PER_TURN)));
    const base = samples.get(runners[0]!.runner)!;
    const baseWall = perStep(base, (x) => x.wallMs);
    const baseCpu = perStep(base, (x) => x.cpuMs);
    const rows: OverheadRow[] = runners
      .filter(({ runner }) => samples.get(runner)!.length > 0)
      .map(({ runner, kind }) => {
        const s = samples.get(runner)!;
        const wall = perStep(s, (x) => x.wallMs);
        const cpu = perStep(s, (x) => x.cpuMs);
        return {
          name: runner.name,
          kind,
          turns: s.reduce((n, x) => n + x.turns, 0),
          wallMsPerStep: round(wall, 3),
          cpuMsPerStep: round(cpu, 3),
          overheadWallMsPerStep: round(kind === 'baseline' ? 0 : wall - baseWall, 3),
          overheadCpuMsPerStep: round(kind === 'baseline' ? 0 : cpu - baseCpu, 3),
          heapKbPerTurn: round(median(s.map((x) => x.allocated / x.turns)) / 1024, 1),
        };
      });
    const hermes = rows.find((r) => r.name === 'hermes-agent (gateway)');
    for (const r of rows) {
      if (hermes && r.kind !== 'baseline' && hermes.overheadWallMsPerStep > 0) r.ratioToHermes = round(r.overheadWallMsPerStep / hermes.overheadWallMsPerStep, 2);
    }
    return {
      sizes,
      baselineNote: `per-step baseline = one raw openai SDK chat.completions call to the same in-process fake (${round(baseWall, 3)} ms wall, ${round(baseCpu, 3)} ms CPU); the fake's own work is inside it and subtracted`,
      rows,
      errors,
    };
  } finally {
    for (const { runner } of runners) await runner.close().catch(() => undefined);
    await fake.close();
  }
}
