import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { readResultFile } from '../eval/report.js';
import type { SuiteResult } from '../eval/run-suite.js';

/**
 * The result files `npm run eval` writes (evals/results/*.json), newest first. Each file is read
 * once and kept until its modification time changes; a file that is not a result file is listed
 * with its problem instead of failing the page.
 */

export type EvalRun = { file: string; result: SuiteResult } | { file: string; problem: string };

const MAX_FILES = 200;

export function createEvalRuns(dir: string): { list(): Promise<EvalRun[]> } {
  const cache = new Map<string, { mtimeMs: number; run: EvalRun }>();
  return {
    async list() {
      let names: string[];
      try {
        names = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort().slice(-MAX_FILES);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
      const runs: EvalRun[] = [];
      for (const file of names) {
        const full = path.join(dir, file);
        let mtimeMs: number;
        try {
          mtimeMs = (await stat(full)).mtimeMs;
        } catch {
          continue;
        }
        const hit = cache.get(file);
        if (hit && hit.mtimeMs === mtimeMs) {
          runs.push(hit.run);
          continue;
        }
        let run: EvalRun;
        try {
          run = { file, result: await readResultFile(full) };
        } catch (err) {
          run = { file, problem: (err as Error).message.replace(full, file) };
        }
        cache.set(file, { mtimeMs, run });
        runs.push(run);
      }
      for (const f of cache.keys()) if (!names.includes(f)) cache.delete(f);
      const at = (r: EvalRun) => ('result' in r ? r.result.startedAt : '');
      return runs.sort((a, b) => (at(a) < at(b) ? 1 : at(a) > at(b) ? -1 : a.file < b.file ? 1 : -1));
    },
  };
}
