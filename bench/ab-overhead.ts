/**
 * Section 1's hermes runners of two versions in ONE process, interleaved round by round with the
 * raw-SDK baseline and the AI SDK like bench/overhead.ts interleaves its runners, so the machine's
 * load hits both versions alike (alternating whole runs cannot tell tenths of a millisecond from the
 * load on a busy shared machine). Bundle bench/hermes-runners.ts of each worktree alike first:
 *   npx esbuild bench/hermes-runners.ts --bundle --format=esm --platform=node --target=node20 \
 *     --packages=external --keep-names --outfile=.tmp/ab/runners.mjs      (in each worktree)
 *   npx tsx bench/ab-overhead.ts <before>/.tmp/ab/runners.mjs <after>/.tmp/ab/runners.mjs [rounds] [turns per round]
 * Prints overhead CPU ms per step (median of the rounds, minus the baseline's) and heap KB per turn.
 * Needs the peers (npm --prefix bench install).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import type { TurnRunner } from './hermes-runners.js';
import { scriptedStep, STEPS_PER_TURN, TURN_PROMPT, LOOKUP_DESCRIPTION, lookupValue, FINAL_ANSWER } from './step-script.js';
import { measureAllocation, measureTime, median } from './stats.js';
import type { PeerModule } from './peers/peer-api.js';
type Runners = typeof import('./hermes-runners.js');
const [beforeFile, afterFile, ...sizes] = process.argv.slice(2);
if (!beforeFile || !afterFile) throw new Error('usage: ab-overhead.ts <before runners.mjs> <after runners.mjs> [rounds] [turns per round]');
const before = (await import(pathToFileURL(path.resolve(beforeFile)).href)) as Runners;
const { hermesGatewayRunner, hermesLoopRunner } = (await import(pathToFileURL(path.resolve(afterFile)).href)) as Runners;
// By computed URL, like bench/peer-loader.ts: the app's typecheck does not follow the peers.
const { peer } = (await import(new URL('./peers/ai-sdk.ts', import.meta.url).href)) as { peer: PeerModule };
const [rounds = 15, per = 20] = sizes.map(Number);
const fake = await startFakeOpenAI({ handler: scriptedStep });
const client = new OpenAI({ apiKey: 'k', baseURL: fake.url, maxRetries: 0, timeout: 30_000 });
const tools = [{ type: 'function' as const, function: { name: 'lookup', description: LOOKUP_DESCRIPTION, parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] } } }];
const baseline: TurnRunner = { name: 'baseline', runTurn: async () => { for (let i = 0; i < STEPS_PER_TURN; i++) await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: TURN_PROMPT }], tools }); }, close: async () => {} };
const agent = await peer.create(fake.url, [{ name: 'lookup', description: LOOKUP_DESCRIPTION, argName: 'key', run: lookupValue }], 'You are a helpful assistant. Use the tools when asked.');
const ai: TurnRunner = { name: 'ai', runTurn: async () => { const t = await agent.askFresh(TURN_PROMPT); if (!t.includes(FINAL_ANSWER)) throw new Error('ai'); }, close: async () => {} };
const runners: Array<[string, TurnRunner]> = [
  ['baseline', baseline], ['ai', ai],
  ['gw-before', await before.hermesGatewayRunner(fake.url)], ['gw-after', await hermesGatewayRunner(fake.url)],
  ['loop-before', await before.hermesLoopRunner(fake.url)], ['loop-after', await hermesLoopRunner(fake.url)],
];
const cpu = new Map<string, number[]>(); const heap = new Map<string, number[]>();
for (const [, r] of runners) for (let i = 0; i < 40; i++) await r.runTurn();
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < runners.length; i++) {
    const [name, r] = runners[(i + round) % runners.length]!;
    const { result, allocatedBytes } = await measureAllocation(() => measureTime(async () => { for (let t = 0; t < per; t++) await r.runTurn(); }));
    (cpu.get(name) ?? cpu.set(name, []).get(name)!).push(result.cpuMs / (per * STEPS_PER_TURN));
    (heap.get(name) ?? heap.set(name, []).get(name)!).push(allocatedBytes / per / 1024);
  }
  fake.requests.length = 0;
}
const c = (n: string) => median(cpu.get(n)!); const b = c('baseline');
const o = (n: string) => +(c(n) - b).toFixed(3);
const out = { rounds, per, baselineCpu: +b.toFixed(3), overheadCpu: Object.fromEntries(runners.slice(1).map(([n]) => [n, o(n)])), heapKbPerTurn: Object.fromEntries(runners.map(([n]) => [n, +median(heap.get(n)!).toFixed(1)])),
  gwRatioBefore: +(o('gw-before') / o('ai')).toFixed(2), gwRatioAfter: +(o('gw-after') / o('ai')).toFixed(2), loopRatioBefore: +(o('loop-before') / o('ai')).toFixed(2), loopRatioAfter: +(o('loop-after') / o('ai')).toFixed(2) };
console.log(JSON.stringify(out));
for (const [, r] of runners) await r.close();
await fake.close();
process.exit(0);
