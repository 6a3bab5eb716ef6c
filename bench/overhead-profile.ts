import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import { startFakeOpenAI } from '../test/fakes/openai/fake-openai.js';
import { hermesGatewayRunner, hermesLoopRunner } from './hermes-runners.js';
import { scriptedStep } from './step-script.js';
import { measureAllocation } from './stats.js';

/**
 * A V8 CPU profile of section 1's hermes runner alone (the gateway by default, `loop` for the agent
 * loop): warm-up turns, then the profiled turns, written as a .cpuprofile. Compile it like the
 * bench's bot process (bench/compile.ts) so the profile shows plain JavaScript:
 *   npx esbuild bench/overhead-profile.ts --bundle --format=esm --platform=node --packages=external \
 *     --keep-names --outfile=.tmp/bench/overhead-profile.mjs && node .tmp/bench/overhead-profile.mjs out.cpuprofile
 * Args: <out.cpuprofile> [gateway|loop] [warm-up turns] [profiled turns]. Also prints heap KB per turn.
 * OVERHEAD_PROFILE_HEAP=1 takes a sampling heap profile (.heapprofile) instead.
 */
const [out = 'overhead.cpuprofile', which = 'gateway', warm = '100', turns = '400'] = process.argv.slice(2);
const fake = await startFakeOpenAI({ handler: scriptedStep });
// The gateway's data folder is ours here, so the trace bytes a turn writes can be counted.
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'hermes-overhead-profile-'));
const traceBytes = async () => {
  const dir = path.join(dataDir, 'traces');
  const files = await readdir(dir).catch(() => [] as string[]);
  let n = 0;
  for (const f of files) n += (await stat(path.join(dir, f))).size;
  return n;
};
const runner = which === 'loop' ? await hermesLoopRunner(fake.url) : await hermesGatewayRunner(fake.url, { HERMES_DATA_DIR: dataDir });
for (let i = 0; i < Number(warm); i++) await runner.runTurn();
fake.requests.length = 0;
const bytes0 = await traceBytes();
const alloc = await measureAllocation(async () => {
  for (let i = 0; i < 100; i++) await runner.runTurn();
});
const tracedPerTurn = ((await traceBytes()) - bytes0) / 100;
fake.requests.length = 0;
const session = new Session();
session.connect();
const heap = process.env.OVERHEAD_PROFILE_HEAP === '1';
if (heap) {
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
} else {
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
const cpu0 = process.cpuUsage();
for (let i = 0; i < Number(turns); i++) {
  await runner.runTurn();
  if (i % 50 === 0) fake.requests.length = 0;
}
const cpu = process.cpuUsage(cpu0);
const { profile } = heap ? await session.post('HeapProfiler.stopSampling') : await session.post('Profiler.stop');
await writeFile(out, JSON.stringify(profile));
console.log(`${runner.name}: ${Number(turns)} turns, CPU ${((cpu.user + cpu.system) / 1000 / Number(turns) / 5).toFixed(3)} ms/step (profiler on), heap ${(alloc.allocatedBytes / 100 / 1024).toFixed(1)} KB/turn${which === 'loop' ? '' : `, trace ${(tracedPerTurn / 1024).toFixed(2)} KB/turn`}`);
session.disconnect();
await runner.close();
await fake.close();
await rm(dataDir, { recursive: true, force: true });
