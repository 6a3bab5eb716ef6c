/**
 * A reply's outbound calls (bench/reply-calls.ts) of two checkouts in ONE process, interleaved round
 * by round against the same fake model and fake Slack, so the shared machine's load hits both alike.
 * Bundle bench/reply-calls.ts in each checkout first (copy it into the older one):
 *   npx esbuild bench/reply-calls.ts --bundle --format=esm --platform=node --target=node20 \
 *     --packages=external --keep-names --outfile=.tmp/ab/reply-calls.mjs
 *   npx tsx bench/ab-reply-calls.ts <before>/.tmp/ab/reply-calls.mjs <after>/.tmp/ab/reply-calls.mjs [rounds] [replies per round]
 * Prints CPU ms per reply (this process, fakes included: they do the same work for both) and heap
 * KB per reply, medians of the rounds.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { startFakeSlack } from '../test/fakes/slack/fake-slack.js';
import { measureAllocation, measureTime, median } from './stats.js';

type Module = typeof import('./reply-calls.js');
const [beforeFile, afterFile, ...sizes] = process.argv.slice(2);
if (!beforeFile || !afterFile) throw new Error('usage: ab-reply-calls.ts <before reply-calls.mjs> <after reply-calls.mjs> [rounds] [replies per round]');
const [rounds = 15, per = 100] = sizes.map(Number);
const ai = await startFakeOpenAI({ handler: () => ({ text: 'Paris: it has been the capital since 987.' }) });
const slack = await startFakeSlack();
const sides: Array<[string, () => Promise<void>]> = [];
for (const [name, file] of [['before', beforeFile], ['after', afterFile]] as const) {
  const m = (await import(pathToFileURL(path.resolve(file)).href)) as Module;
  sides.push([name, m.replyCalls(ai.url, slack.apiUrl, slack.botToken)]);
}
for (const [, reply] of sides) for (let i = 0; i < 50; i++) await reply();
async function replies(reply: () => Promise<void>, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await reply();
}
const cpu = new Map<string, number[]>();
const heap = new Map<string, number[]>();
for (let r = 0; r < rounds; r++) {
  for (const [name, reply] of r % 2 === 0 ? sides : [...sides].reverse()) {
    const t = await measureTime(() => replies(reply, per));
    (cpu.get(name) ?? cpu.set(name, []).get(name)!).push(t.cpuMs / per);
  }
}
for (const [name, reply] of sides) heap.set(name, [(await measureAllocation(() => replies(reply, per))).allocatedBytes / 1024 / per]);
const [b, a] = [median(cpu.get('before')!), median(cpu.get('after')!)];
console.log(`CPU ms per reply's outbound calls: before ${b.toFixed(3)}, after ${a.toFixed(3)} (${(((a - b) / b) * 100).toFixed(1)} %); heap KB per reply: before ${heap.get('before')![0]!.toFixed(1)}, after ${heap.get('after')![0]!.toFixed(1)}`);
await ai.close();
await slack.close();
process.exit(0);
