#!/usr/bin/env node
// Moves src/ modules into their layer folders (docs/architecture.md) with `git mv`, then rewrites
// every relative import that pointed at an old place, and the `src/…` paths named in docs, tests,
// the bench and the build files. It is safe to run again: after merging a branch that was started
// before the regroup, a file that branch added in an old folder is moved like the rest, and
// imports written against the old layout are pointed at the new one. Files already in place whose
// imports resolve are left alone.
//
//   node scripts/regroup-src.mjs            move and rewrite
//   node scripts/regroup-src.mjs --dry-run  print what would change
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmdirSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DRY = process.argv.includes('--dry-run');

/**
 * Old place (file or folder, relative to the repository) → new place. The second group came after
 * the first regroup, when the layering check showed what the real imports need (settings below
 * everything that reads them, the tool API above the state and capabilities it hands to tools, the
 * platform ports with the other shared shapes); it lists both the original and the first-regroup
 * place, so a branch from before either commit is carried straight to the end.
 */
export const MOVES = {
  // basics: no knowledge of models, tools, storage or platforms
  'src/clock.ts': 'src/basics/clock.ts',
  'src/values.ts': 'src/basics/values.ts',
  'src/types.ts': 'src/basics/types.ts',
  'src/log.ts': 'src/basics/log.ts',
  'src/startup-refusal.ts': 'src/basics/startup-refusal.ts',
  'src/env-file.ts': 'src/basics/env-file.ts',
  'src/cli': 'src/basics/cli',
  'src/text': 'src/basics/text',
  'src/safety': 'src/basics/safety',
  // runtime: talking to a model, building its context, writing traces
  'src/provider': 'src/runtime/provider',
  'src/context': 'src/runtime/context',
  'src/trace': 'src/runtime/trace',
  // state: what survives a restart
  'src/store': 'src/state/store',
  'src/sessions': 'src/state/sessions',
  'src/approvals': 'src/state/approvals',
  'src/reminders': 'src/state/reminders',
  'src/schedules': 'src/state/schedules',
  'src/timers': 'src/state/timers',
  'src/cluster': 'src/state/cluster',
  'src/memory': 'src/state/memory',
  // capabilities: what tools reach outside the process with, and the tool API that hands it to them
  'src/net': 'src/capabilities/net',
  'src/sandbox': 'src/capabilities/sandbox',
  'src/workspace': 'src/capabilities/workspace',
  'src/documents': 'src/capabilities/documents',
  'src/toolkit': 'src/capabilities/toolkit',
  // agent: one turn of model and tools (src/agent stays where it is), and sub-agents
  'src/subagents': 'src/agent/subagents',
  // gateway: from a platform's message to a turn and back; who may talk
  'src/access': 'src/gateway/access',
  // operations: watching and measuring the bot
  'src/dashboard': 'src/operations/dashboard',
  'src/telemetry': 'src/operations/telemetry',
  'src/stats': 'src/operations/stats',
  'src/eval': 'src/operations/eval',
  // app: the composition root (src/main.ts and src/launch.mjs stay as the entry points)
  'src/app.ts': 'src/app/app.ts',
  'src/crash-handlers.ts': 'src/app/crash-handlers.ts',
  'src/data-dir.ts': 'src/app/data-dir.ts',
  'src/chat-log.ts': 'src/app/chat-log.ts',

  // second group
  'src/runtime/toolkit': 'src/capabilities/toolkit',
  'src/toolkit/lenient-json.ts': 'src/runtime/provider/lenient-json.ts',
  'src/runtime/toolkit/lenient-json.ts': 'src/runtime/provider/lenient-json.ts',
  'src/toolkit/closest-match.ts': 'src/basics/text/closest-match.ts',
  'src/runtime/toolkit/closest-match.ts': 'src/basics/text/closest-match.ts',
  'src/safety/outside-gate.ts': 'src/capabilities/toolkit/outside-gate.ts',
  'src/basics/safety/outside-gate.ts': 'src/capabilities/toolkit/outside-gate.ts',
  'src/gateway/ports.ts': 'src/basics/ports.ts',
  'src/approvals/approval-outcome.ts': 'src/basics/approval-outcome.ts',
  'src/state/approvals/approval-outcome.ts': 'src/basics/approval-outcome.ts',
  'src/agent/model-notes.ts': 'src/basics/model-notes.ts',
  'src/access/usage-meter.ts': 'src/state/usage/usage-meter.ts',
  'src/gateway/access/usage-meter.ts': 'src/state/usage/usage-meter.ts',
  // settings: every setting's schema, read by the layers above
  'src/config.ts': 'src/settings/config.ts',
  'src/app/config.ts': 'src/settings/config.ts',
  'src/config-env.ts': 'src/settings/config-env.ts',
  'src/app/config-env.ts': 'src/settings/config-env.ts',
  'src/unknown-settings.ts': 'src/settings/unknown-settings.ts',
  'src/app/unknown-settings.ts': 'src/settings/unknown-settings.ts',
  'src/access/allow-rules.ts': 'src/settings/allow-rules.ts',
  'src/gateway/access/allow-rules.ts': 'src/settings/allow-rules.ts',
  'src/dashboard/dashboard-config.ts': 'src/settings/dashboard-config.ts',
  'src/operations/dashboard/dashboard-config.ts': 'src/settings/dashboard-config.ts',
  'src/subagents/profiles.ts': 'src/settings/agent-profiles.ts',
  'src/agent/subagents/profiles.ts': 'src/settings/agent-profiles.ts',
};

const OLD = Object.keys(MOVES).sort((a, b) => b.length - a.length);
const NEW = Object.values(MOVES).sort((a, b) => b.length - a.length);
const INVERSE = {};
for (const [o, n] of Object.entries(MOVES)) (INVERSE[n] ??= []).push(o);

/** Where an old path lives now (unchanged when it did not move). */
function mapPath(p) {
  for (const o of OLD) {
    if (p === o) return MOVES[o];
    if (p.startsWith(o + '/')) return MOVES[o] + p.slice(o.length);
    // a moved file named by its compiled name (`src/config.js` for `src/config.ts`)
    const stem = o.replace(/\.ts$/, '');
    if (stem !== o && /^\.[cm]?[jt]sx?$/.test(p.slice(stem.length)) && p.startsWith(stem)) {
      return MOVES[o].replace(/\.ts$/, '') + p.slice(stem.length);
    }
  }
  return p;
}

/** Where a new path may have lived before the regroup (itself when it did not move). */
function unmapPaths(p) {
  for (const n of NEW) {
    if (p === n) return INVERSE[n];
    if (p.startsWith(n + '/')) return INVERSE[n].map((o) => o + p.slice(n.length));
  }
  return [p];
}

const rel = (p) => path.relative(ROOT, p).split(path.sep).join('/');
const abs = (r) => path.join(ROOT, r);

/** The source file an import specifier's target names (`.js` imports `.ts` sources), if any. */
function targetFile(r) {
  const candidates = [r];
  if (r.endsWith('.js')) candidates.push(r.slice(0, -3) + '.ts', r.slice(0, -3) + '.tsx');
  if (r.endsWith('.mjs')) candidates.push(r.slice(0, -4) + '.mts');
  if (!/\.[cm]?[jt]sx?$|\.json$/.test(r)) candidates.push(r + '.ts', r + '/index.ts');
  return candidates.find((c) => existsSync(abs(c)) && statSync(abs(c)).isFile());
}

function gitMv(from, to) {
  console.log(`move ${from} → ${to}`);
  if (DRY) return;
  mkdirSync(path.dirname(abs(to)), { recursive: true });
  try {
    execFileSync('git', ['mv', from, to], { cwd: ROOT, stdio: 'pipe' });
  } catch {
    renameSync(abs(from), abs(to)); // not tracked yet (a new file from a merge in progress)
  }
}

/** Moves every file still under an old place, one file at a time (folders may already exist). */
function moveAll() {
  const moved = new Map(); // new path → old path, for files moved in this run
  const walk = (r) => {
    const a = abs(r);
    if (!existsSync(a)) return [];
    if (statSync(a).isFile()) return [r];
    return readdirSync(a).flatMap((n) => walk(`${r}/${n}`));
  };
  for (const o of OLD) {
    for (const f of walk(o)) {
      const to = mapPath(f);
      if (to === f || existsSync(abs(to))) continue;
      gitMv(f, to);
      moved.set(to, f);
    }
  }
  return moved;
}

const SPEC = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*|\bvi\.importActual\s*\(\s*)(['"])(\.{1,2}\/[^'"]*)\2/g;

function rewriteImports(file, moved) {
  const text = readFileSync(abs(file), 'utf8');
  const dir = path.posix.dirname(file);
  const oldSelves = moved.has(file) ? [moved.get(file)] : unmapPaths(file);
  const out = text.replace(SPEC, (whole, lead, q, spec) => {
    const here = path.posix.normalize(path.posix.join(dir, spec));
    // A file that did not move in this run and whose import resolves was written for this layout.
    if (!moved.has(file) && targetFile(here)) return whole;
    const wanted = oldSelves.map((o) => mapPath(path.posix.normalize(path.posix.join(path.posix.dirname(o), spec))));
    const target = [...wanted, mapPath(here)].find((t) => targetFile(t));
    if (!target) return whole;
    let next = path.posix.relative(dir, target);
    if (!next.startsWith('.')) next = './' + next;
    return next === spec ? whole : `${lead}${q}${next}${q}`;
  });
  if (out !== text) {
    console.log(`imports ${file}`);
    if (!DRY) writeFileSync(abs(file), out);
  }
}

/** `src/<old>` named as a path in prose, scripts, tests and build files. */
function rewritePaths(file) {
  const text = readFileSync(abs(file), 'utf8');
  let out = text;
  for (const o of OLD) {
    // a folder followed by `/` or the end of a word; a file only with its extension (`src/app.ts`
    // must not match the new `src/app/…`, or a second run would move it again)
    const isFile = o.endsWith('.ts');
    const bare = o.replace(/\.ts$/, '');
    const tail = isFile ? '(?=\\.(?:ts|js)\\b)' : '(?=/|\\b)';
    const re = new RegExp(`(^|[^\\w./-]|dist/)${bare.replace(/[.]/g, '\\.')}${tail}`, 'gm');
    out = out.replace(re, (_, pre) => pre + MOVES[o].replace(/\.ts$/, ''));
  }
  if (out !== text) {
    console.log(`paths ${file}`);
    if (!DRY) writeFileSync(abs(file), out);
  }
}

function listFiles(dir, exts) {
  const a = abs(dir);
  if (!existsSync(a)) return [];
  const out = [];
  for (const e of readdirSync(a, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name === 'results' || e.name.startsWith('.')) continue;
    const r = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...listFiles(r, exts));
    else if (exts.some((x) => e.name.endsWith(x))) out.push(r);
  }
  return out;
}

/** Old folders left empty by the moves (git keeps no folders, but a work tree does). */
function removeEmptyFolders(dir) {
  const a = abs(dir);
  if (!existsSync(a) || !statSync(a).isDirectory()) return;
  for (const e of readdirSync(a, { withFileTypes: true })) if (e.isDirectory()) removeEmptyFolders(`${dir}/${e.name}`);
  if (readdirSync(a).length === 0 && !DRY) rmdirSync(a);
}

const moved = moveAll();
for (const o of OLD) removeEmptyFolders(o);
const CODE = ['.ts', '.mts', '.mjs', '.js', '.cjs'];
const code = ['src', 'adapters', 'tools', 'test', 'bench', 'scripts'].flatMap((d) => listFiles(d, CODE));
for (const f of code) rewriteImports(f, moved);
const named = [
  ...code,
  ...listFiles('docs', ['.md']),
  ...listFiles('.ci', ['']),
  ...['README.md', 'package.json', 'Dockerfile', 'tsconfig.json', 'vitest.config.ts', '.dependency-cruiser.cjs'].filter((f) => existsSync(abs(f))),
].filter((f) => f !== 'scripts/regroup-src.mjs');
for (const f of named) rewritePaths(f);
