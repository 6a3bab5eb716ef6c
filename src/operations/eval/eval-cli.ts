import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseCli, type CliIo } from '../../basics/cli/parse-cli.js';
import type { AnyTool } from '../../capabilities/toolkit/tool-api.js';
import { CaseFileError, loadCases, selectCases } from './case-schema.js';
import { formatComparison, formatSuite, readResultFile } from './report.js';
import { EvalHarnessError, type CreateEvalCore } from './run-case.js';
import { runSuite, type SuiteHooks } from './run-suite.js';
import { scriptedModel } from './scripted-model.js';
import { DEFAULT_FEEDBACK_FILE, exportFeedbackCases, FEEDBACK_TAG } from './feedback-cases.js';
import { openFeedbackForReading } from '../../state/feedback/open-feedback.js';
import { parseWhen } from '../stats/stats-cli.js';

/**
 * `npm run eval`: a measurement, not a test. The exit code is non-zero only when the harness
 * itself could not run (bad case files, bad settings, unreadable result files); failed cases are
 * results and exit 0.
 */

const USAGE = `Usage:
  npm run eval [-- options]              run evals/*.yaml against OPENAI_BASE_URL / HERMES_MODEL
  npm run eval -- --compare a.json b.json   show two result files side by side
  npm run eval -- --from-feedback [--since 30d]   turn answers voted 👎 into cases in evals/from-feedback.yaml

Options:
  --cases DIR        folder of case files (default evals)
  --case NAME        only this case (repeat or comma-separate)
  --tag TAG          only cases with this tag (repeat or comma-separate)
  --out FILE         where to write the JSON results (default evals/results/<time>-<model>.json)
  --scripted         play each case's script: section through a local fake model (proves the harness)
  --timeout-ms N     give up on a case after N ms (default 300000)
  --keep-data        keep each case's data folder (traces, SQLite) and print where it is
  --from-feedback    write cases for down-voted answers (votes from the bot's database, requests
                     from its traces) instead of running; --out sets the file, --since the window
  --since WHEN       with --from-feedback: votes since 30m, 24h, 7d, 2w ago or an ISO date (default 30d)
  --traces DIR       with --from-feedback: trace folder (default $HERMES_DATA_DIR/traces)
  --help`;

export type { CliIo } from '../../basics/cli/parse-cli.js';

const list = (v: string[] | undefined) => (v ?? []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);

/** `tools`: what each case's core offers (main.ts passes the built-ins). */
export async function main(argv: string[], io: CliIo, deps: { tools: () => AnyTool[]; createCore: CreateEvalCore }): Promise<number> {
  const parsed = parseCli(argv, {
    cases: { type: 'string' },
    case: { type: 'string', multiple: true },
    tag: { type: 'string', multiple: true },
    out: { type: 'string' },
    compare: { type: 'boolean' },
    scripted: { type: 'boolean' },
    'timeout-ms': { type: 'string' },
    'keep-data': { type: 'boolean' },
    'from-feedback': { type: 'boolean' },
    since: { type: 'string' },
    traces: { type: 'string' },
    help: { type: 'boolean' },
  }, USAGE, io, true);
  if (parsed.exit !== undefined) return parsed.exit;
  const args = parsed.args;
  const o = args.values;
  if (o.compare) {
    if (args.positionals.length !== 2) {
      io.err('--compare needs two result files: npm run eval -- --compare a.json b.json');
      return 2;
    }
    try {
      const [a, b] = args.positionals as [string, string];
      const [ra, rb] = await Promise.all([readResultFile(path.resolve(io.cwd, a)), readResultFile(path.resolve(io.cwd, b))]);
      for (const line of formatComparison(ra, rb, [a, b])) io.out(line);
      return 0;
    } catch (err) {
      io.err((err as Error).message);
      return 2;
    }
  }
  if (o['from-feedback']) return fromFeedback(io, { since: o.since, out: o.out, traces: o.traces });
  if (args.positionals.length) {
    io.err(`unexpected argument ${JSON.stringify(args.positionals[0])}\n${USAGE}`);
    return 2;
  }
  const timeoutMs = o['timeout-ms'] === undefined ? undefined : Number(o['timeout-ms']);
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
    io.err('--timeout-ms must be a whole number of milliseconds above 0');
    return 2;
  }

  let cases;
  try {
    cases = selectCases(await loadCases(path.resolve(io.cwd, o.cases ?? 'evals')), { names: list(o.case), tags: list(o.tag) });
  } catch (err) {
    if (err instanceof CaseFileError) {
      io.err('Case files have problems:');
      for (const p of err.problems) io.err(`  ${p}`);
      return 2;
    }
    throw err;
  }
  if (cases.length === 0) {
    io.err('No case matches the filters (--case / --tag).');
    return 2;
  }

  let env = io.env;
  const hooks: SuiteHooks = {
    afterCase: (r) => io.out(`${r.passed ? 'pass' : 'FAIL'}  ${r.name}  (${r.steps} steps, ${r.latencyMs} ms)${r.error ? `: ${r.error}` : ''}`),
  };
  let closeFake: (() => Promise<void>) | undefined;
  if (o.scripted) {
    // A development aid: the fake server lives with the tests; real runs never load it.
    const { startFakeOpenAI } = await import('../../../test/fakes/openai/fake-openai.js');
    const fake = await startFakeOpenAI();
    closeFake = fake.close;
    env = { ...env, OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'scripted-model-key', HERMES_MODEL: 'scripted', HERMES_MODEL_RETRIES: '0', HERMES_TOOL_MODE: 'native' };
    hooks.beforeCase = (c) => {
      if (!c.script) io.err(`note: case ${c.name} has no script: section; the scripted model will answer "ok"`);
      const model = scriptedModel(c.script ?? [{ say: 'ok' }]);
      fake.setHandler((req) => model.next(req));
    };
  }
  try {
    const result = await runSuite(cases, { env, tools: deps.tools, createCore: deps.createCore, timeoutMs, scripted: o.scripted, keepData: o['keep-data'], onDataDir: (d) => io.out(`  data kept in ${d}`) }, hooks);
    for (const line of formatSuite(result)) io.out(line);
    const out = path.resolve(io.cwd, o.out ?? path.join('evals', 'results', `${result.startedAt.replace(/[:.]/g, '-')}-${result.model.replace(/[^\w.-]+/g, '_')}.json`));
    await mkdir(path.dirname(out), { recursive: true });
    await writeFile(out, JSON.stringify(result, null, 2) + '\n');
    io.out(`Results written to ${path.relative(io.cwd, out) || out}`);
    return 0;
  } catch (err) {
    if (err instanceof EvalHarnessError) {
      io.err(`The eval harness could not run: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    await closeFake?.();
  }
}


async function fromFeedback(io: CliIo, o: { since?: string; out?: string; traces?: string }): Promise<number> {
  const now = io.now?.() ?? Date.now();
  const since = parseWhen(o.since ?? '30d', now);
  if (since === undefined) {
    io.err(`--since ${JSON.stringify(o.since)} is not a time: use 30m, 24h, 7d, 2w or an ISO date like 2026-03-14`);
    return 2;
  }
  const dataDir = path.resolve(io.cwd, io.env.HERMES_DATA_DIR?.trim() || './data');
  const tracesDir = path.resolve(io.cwd, o.traces ?? path.join(dataDir, 'traces'));
  const file = path.resolve(io.cwd, o.out ?? DEFAULT_FEEDBACK_FILE);
  let opened;
  try {
    opened = await openFeedbackForReading(io.env, io.cwd);
  } catch (err) {
    io.err(`The votes could not be read: ${(err as Error).message}`);
    return 1;
  }
  if (!opened) {
    io.out('No votes yet: the bot has no database with votes here (set HERMES_DATA_DIR or HERMES_STORE_URL as the bot has them).');
    return 0;
  }
  try {
    const r = await exportFeedbackCases({ reader: opened.reader, tracesDir, file, window: { since, until: now + 1 } });
    const shown = path.relative(io.cwd, r.file) || r.file;
    if (r.added.length) io.out(`Added ${r.added.length} case${r.added.length === 1 ? '' : 's'} to ${shown}: ${r.added.join(', ')}`);
    else io.out(`No new down-voted answers since ${new Date(since).toISOString()}; ${shown} is unchanged.`);
    if (r.missing.length) io.err(`Skipped ${r.missing.length} down-voted turn(s) whose trace is gone: ${r.missing.join(', ')}`);
    io.out(`Run them with: npm run eval -- --tag ${FEEDBACK_TAG}${o.out ? ` --cases ${path.dirname(shown)}` : ''}`);
    return 0;
  } catch (err) {
    if (err instanceof CaseFileError) {
      io.err(`${path.relative(io.cwd, file) || file} has problems; fix them first:`);
      for (const p of err.problems) io.err(`  ${p}`);
      return 2;
    }
    throw err;
  } finally {
    await opened.close();
  }
}
