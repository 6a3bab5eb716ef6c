import { BENCH_DIR } from './peer-loader.js';
import { FULL, QUICK, runBench, SECTIONS, type Section } from './bench.js';
import { publishLatest, resultPaths } from './results-paths.js';

/**
 * `npm run bench [-- --quick] [-- --only=overhead,tokens] [-- --no-peers] [-- --publish]`
 * `npm run bench:publish` (publish the last local run without running again)
 * Installs nothing; talks only to 127.0.0.1; writes bench/results/local/latest.{md,json} (ignored
 * by git). `--publish` then copies them to the tracked bench/results/ and into docs/performance.md.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const paths = resultPaths(BENCH_DIR);
  if (args.includes('--publish-only')) {
    const written = await publishLatest(paths);
    process.stdout.write(`Published: ${written.join(', ')}\n`);
    return;
  }
  const quick = args.includes('--quick');
  const only = args.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',');
  const unknown = only?.filter((s) => !SECTIONS.includes(s as Section)) ?? [];
  if (unknown.length) {
    process.stderr.write(`unknown section(s) ${unknown.join(', ')}: choose from ${SECTIONS.join(', ')}\n`);
    process.exit(2);
  }
  const result = await runBench({
    sizes: quick ? QUICK : FULL,
    mode: quick ? 'quick' : 'full',
    sections: only as Section[] | undefined,
    peers: !args.includes('--no-peers'),
    outDir: paths.local,
  });
  process.stdout.write(`\n${result.goals.map((g) => `${g.status.toUpperCase().padEnd(12)} ${g.goal}: ${g.detail}`).join('\n')}\n`);
  if (result.errors.length) process.stdout.write(`\n${result.errors.length} error(s):\n${result.errors.map((e) => `  - ${e}`).join('\n')}\n`);
  process.stdout.write(`\nWrote ${paths.local}/latest.md and latest.json (${result.durationS} s).\n`);
  if (args.includes('--publish')) {
    const written = await publishLatest(paths);
    process.stdout.write(`Published: ${written.join(', ')}\n`);
  } else {
    process.stdout.write('Not published: "npm run bench:publish" copies this run to bench/results/ and docs/performance.md.\n');
  }
  // Keep-alive sockets and library timers must not hold the process open after the report. A
  // section that broke exits 1 so CI notices; missed goals are results, not failures.
  process.exit(result.errors.length ? 1 : 0);
}

main().catch((err: Error) => {
  process.stderr.write(`bench failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
