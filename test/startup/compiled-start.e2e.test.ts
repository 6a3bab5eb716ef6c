import { spawn, spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../src/build-state.mjs';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/openai/fake-openai.js';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.js';
import { ensureBuilt } from '../helpers/ensure-build.js';

/**
 * Production runs the compiled build (`npm install` builds dist/ through `prepare`; `npm start`
 * runs it through src/launch.mjs), and loads big libraries only when first needed. These spawn
 * the real build as an operator would and look at what it did and what it loaded.
 */

/** Packages a start must not load unless their feature is configured or used. */
const LAZY = [
  'discord.js', '@slack/bolt', 'mathjs', 'pg', 'html-to-text', 'yaml', 'cronstrue', 'pdfjs-dist', 'mammoth',
  '@modelcontextprotocol/sdk', '@opentelemetry/api', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http',
];
/** Packages the build bundles into dist/ (scripts/build.mjs): never loaded from node_modules. */
const BUNDLED = ['kysely', 'openai', 'zod'];

// Records every module the child loads: ES modules through a load hook (it only listens; nothing
// is replaced), CommonJS ones from the require cache when the process exits.
const RECORDER = `
import { appendFileSync, writeFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
const out = process.env.RECORD_MODULES;
writeFileSync(out, '');
register('data:text/javascript,' + encodeURIComponent(\`
  import { appendFileSync } from 'node:fs';
  export async function load(url, context, next) {
    appendFileSync(\${JSON.stringify(out)}, url + '\\\\n');
    return next(url, context);
  }\`));
process.on('exit', () => appendFileSync(out, Object.keys(createRequire(import.meta.url).cache).map((f) => 'file://' + f).join('\\n') + '\\n'));
`;

let fake: FakeOpenAI;
let slack: FakeSlack;
let discord: FakeDiscord;
let tmp = '';
beforeAll(async () => {
  await ensureBuilt();
  [fake, slack, discord, tmp] = await Promise.all([startFakeOpenAI(), startFakeSlack(), startFakeDiscord(), mkdtemp(path.join(os.tmpdir(), 'hermes-compiled-'))]);
  await writeFile(path.join(tmp, 'recorder.mjs'), RECORDER);
}, 300_000);
afterAll(async () => {
  await Promise.all([fake?.close(), slack?.close(), discord?.close()]);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

interface Bot { stdout(): string; stderr(): string; send(line: string): void; waitFor(where: 'stdout' | 'stderr', pattern: RegExp): Promise<void>; stop(): Promise<number | null> }

function spawnBot(command: string, args: string[], env: Record<string, string>): Bot {
  const child = spawn(command, args, {
    cwd: ROOT,
    // Its own process group: stopping it stops node under npm too.
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: tmp, LOG_LEVEL: 'info', OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'test-key', HERMES_MODEL_RETRIES: '0', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const text = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (d: string) => (text.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (text.stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    send: (line) => child.stdin.write(`${line}\n`),
    async waitFor(where, pattern) {
      const deadline = Date.now() + 60_000;
      while (!pattern.test(text[where])) {
        if (child.exitCode !== null) throw new Error(`exited (${child.exitCode}) before ${pattern}; stderr:\n${text.stderr}`);
        if (Date.now() > deadline) throw new Error(`no ${pattern} within 60 s; stdout:\n${text.stdout}\nstderr:\n${text.stderr}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop() {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
      const timer = setTimeout(() => child.exitCode === null && process.kill(-child.pid!, 'SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

const packagesIn = (urls: string): Set<string> =>
  new Set([...urls.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].map((m) => m[1]!));

/** The files of dist/ holding code from a source whose path matches (dist/meta.json), as module URLs end. */
async function chunksWith(source: RegExp): Promise<string[]> {
  const meta = JSON.parse(await readFile(path.join(ROOT, 'dist/meta.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> };
  return Object.entries(meta.outputs)
    .filter(([out, o]) => out.endsWith('.js') && Object.entries(o.inputs).some(([f, i]) => i.bytesInOutput > 0 && source.test(f)))
    .map(([out]) => `/${out}`);
}
/**
 * Code a bot without a message or a dashboard never runs, in chunks of its own that such a start
 * must not load: the openai SDK (loaded at the first model call, src/runtime/provider/lazy-provider.ts)
 * and the dashboard's pages (src/operations/dashboard/dashboard-route.ts).
 */
const UNUSED_AT_START = /^(node_modules\/openai\/|src\/operations\/dashboard\/(pages\/|dashboard\.ts|trace-index\.ts))/;

describe('the compiled build', () => {
  it('bundles only the zod it uses: no locale but English', async () => {
    // `import { z } from 'zod'` takes zod's whole namespace as one value, which esbuild cannot cut,
    // locales included (~570 KB of the ~790 KB chunk every start parsed); `import * as z from
    // 'zod'` lets it keep only what is used.
    const meta = JSON.parse(await readFile(path.join(ROOT, 'dist/meta.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }> };
    // What went into the chunks (the metafile's own inputs list every file esbuild read).
    const kept = Object.values(meta.outputs).flatMap((o) => Object.entries(o.inputs).filter(([, i]) => i.bytesInOutput > 0).map(([f]) => f));
    const zod = kept.filter((f) => f.includes('node_modules/zod/'));
    expect(zod.length).toBeGreaterThan(0);
    expect(zod.filter((f) => f.includes('/locales/') && !f.endsWith('/locales/en.js'))).toEqual([]);
  });

  it('npm start runs it: the terminal chat gets ready and answers, the calculator loading mathjs on first use', async () => {
    fake.enqueue({ toolCalls: [{ name: 'calculator', arguments: { expression: '6 * 7' } }] }, { text: 'It is 42.' });
    const before = fake.requests.length;
    const bot = spawnBot('npm', ['start', '--silent'], { HERMES_DATA_DIR: path.join(tmp, 'chat-data') });
    try {
      await bot.waitFor('stderr', /"msg":"ready"/);
      bot.send('what is 6 times 7?');
      await bot.waitFor('stdout', /It is 42\./);
      const toolMessage = fake.requests.slice(before)[1]?.messages.find((m) => m.role === 'tool');
      expect(toolMessage?.content).toContain('42');
    } finally {
      await bot.stop();
    }
  }, 120_000);

  it('a start with no platform configured loads no platform SDK, maths library, PostgreSQL driver or HTML parser', async () => {
    const record = path.join(tmp, 'chat-modules.txt');
    const bot = spawnBot(process.execPath, ['--import', path.join(tmp, 'recorder.mjs'), 'src/launch.mjs', 'src/main.js'], { HERMES_DATA_DIR: path.join(tmp, 'lazy-data'), RECORD_MODULES: record });
    await bot.waitFor('stderr', /"msg":"ready"/);
    expect(await bot.stop()).toBe(0);
    const loaded = packagesIn(await readFile(record, 'utf8'));
    // What every start needs shows up, so the recorder sees both kinds of module (keyv is an ES
    // module; better-sqlite3 loads `bindings` through require).
    expect(loaded).toContain('keyv');
    expect(loaded).toContain('bindings');
    expect(LAZY.filter((p) => loaded.has(p))).toEqual([]);
    expect(BUNDLED.filter((p) => loaded.has(p))).toEqual([]);
    const unused = await chunksWith(UNUSED_AT_START);
    expect(unused.length).toBeGreaterThan(1);
    const urls = (await readFile(record, 'utf8')).split('\n');
    expect(unused.filter((chunk) => urls.some((u) => u.endsWith(chunk)))).toEqual([]);
  }, 120_000);

  it('a Slack start (HTTP mode) loads Bolt but not discord.js, nor Bolt\'s Socket Mode client, OAuth installer or Express receiver', async () => {
    const record = path.join(tmp, 'slack-modules.txt');
    const bot = spawnBot(process.execPath, ['--import', path.join(tmp, 'recorder.mjs'), 'src/launch.mjs', 'src/main.js'], {
      HERMES_DATA_DIR: path.join(tmp, 'slack-data'), RECORD_MODULES: record, PORT: '0',
      SLACK_BOT_TOKEN: slack.botToken, SLACK_SIGNING_SECRET: slack.signingSecret, SLACK_API_URL: slack.apiUrl,
    });
    await bot.waitFor('stdout', /"msg":"ready"/);
    expect(await bot.stop()).toBe(0);
    const files = await readFile(record, 'utf8');
    const loaded = packagesIn(files);
    expect(loaded).toContain('@slack/bolt');
    expect(LAZY.filter((p) => p !== '@slack/bolt' && loaded.has(p))).toEqual([]);
    expect(BUNDLED.filter((p) => loaded.has(p))).toEqual([]);
    const unused = await chunksWith(UNUSED_AT_START);
    expect(unused.filter((chunk) => files.split('\n').some((u) => u.endsWith(chunk)))).toEqual([]);
    // Every chunk of ours it loaded is ASCII-only (scripts/ascii-chunks.mjs): one other character
    // makes V8 hold the whole file as a two-byte string, decoded on TextDecoder's slow path.
    const ours = [...new Set(files.split('\n').filter((u) => u.startsWith(`file://${ROOT}/dist/`)))];
    expect(ours.length).toBeGreaterThan(5);
    const wide = [];
    for (const u of ours) if (/[^\x00-\x7F]/.test(await readFile(new URL(u), 'latin1'))) wide.push(u);
    expect(wide).toEqual([]);
    // Bolt's App requires its Socket Mode receiver; the client package behind it (its index is a
    // stand-in until used, adapters/slack/defer-socket-mode.ts) and its WebSocket library stay unloaded.
    expect(files).toContain('/@slack/bolt/dist/receivers/SocketModeReceiver.js');
    expect(files).not.toContain('/@slack/socket-mode/dist/src/SocketModeClient.js');
    expect(loaded).not.toContain('ws');
    // Bolt is loaded file by file (adapters/slack/bolt.ts), not through its index: no Express
    // receiver, no express; @slack/oauth is a stand-in too (only its index entry is cached).
    expect(files).not.toContain('/@slack/bolt/dist/receivers/ExpressReceiver.js');
    expect(files).not.toContain('/@slack/oauth/dist/install-provider.js');
    expect([...loaded].filter((p) => ['express', 'body-parser', 'jsonwebtoken', 'semver'].includes(p))).toEqual([]);
  }, 120_000);

  it('a Discord start connects through discord.js and loads no Bolt', async () => {
    const record = path.join(tmp, 'discord-modules.txt');
    const bot = spawnBot(process.execPath, ['--import', path.join(tmp, 'recorder.mjs'), 'src/launch.mjs', 'src/main.js'], {
      HERMES_DATA_DIR: path.join(tmp, 'discord-data'), RECORD_MODULES: record, DISCORD_TOKEN: 'discord-test-token', DISCORD_API_URL: discord.apiUrl,
    });
    await bot.waitFor('stdout', /"msg":"ready"/);
    expect(bot.stdout()).toContain('"adapters":["discord"]');
    expect(await bot.stop()).toBe(0);
    const loaded = packagesIn(await readFile(record, 'utf8'));
    expect(loaded).toContain('discord.js');
    expect(LAZY.filter((p) => p !== 'discord.js' && loaded.has(p))).toEqual([]);
  }, 120_000);
});

describe('src/launch.mjs', () => {
  /** A tree with the launcher and a stand-in entry that prints its argv. */
  async function tree(): Promise<string> {
    const dir = await mkdtemp(path.join(tmp, 'tree-'));
    await mkdir(path.join(dir, 'src'));
    await cp(path.join(ROOT, 'src/launch.mjs'), path.join(dir, 'src/launch.mjs'));
    await cp(path.join(ROOT, 'src/build-state.mjs'), path.join(dir, 'src/build-state.mjs'));
    await writeFile(path.join(dir, 'src/main.ts'), '// the source\n');
    return dir;
  }
  const launch = (dir: string, ...args: string[]) => spawnSync(process.execPath, [path.join(dir, 'src/launch.mjs'), ...args], { cwd: dir, encoding: 'utf8', timeout: 30_000 });

  it('refuses a missing build with one line naming the command that builds it', async () => {
    const dir = await tree();
    const r = launch(dir, 'src/main.js');
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('hermes: not built yet (dist/src/main.js is missing): run `npm install` (or `npm run build`) first.\n');
  });

  it('refuses a build it cannot check (no metafile, or not one esbuild wrote)', async () => {
    const dir = await tree();
    await build(dir, 'console.log("ran");\n');
    await writeFile(path.join(dir, 'dist/meta.json'), 'not json');
    const damaged = launch(dir, 'src/main.js');
    expect([damaged.status, damaged.stdout]).toEqual([1, '']);
    expect(damaged.stderr).toBe('hermes: the build is damaged (dist/meta.json is not esbuild\'s metafile): run `npm run build` and start again.\n');
    await rm(path.join(dir, 'dist/meta.json'));
    const missing = launch(dir, 'src/main.js');
    expect([missing.status, missing.stdout]).toEqual([1, '']);
    expect(missing.stderr).toBe('hermes: not built yet (dist/meta.json is missing): run `npm install` (or `npm run build`) first.\n');
  });

  /** A build of src/main.ts, as esbuild leaves it: the entry and the metafile naming its sources. */
  async function build(dir: string, code: string): Promise<void> {
    await mkdir(path.join(dir, 'dist/src'), { recursive: true });
    await writeFile(path.join(dir, 'dist/src/main.js'), code);
    await writeFile(path.join(dir, 'dist/meta.json'), JSON.stringify({ inputs: { 'src/main.ts': {}, 'src/gone-since.ts': {} }, outputs: {} }));
  }

  it('runs a current build with the arguments it was given, as if started directly', async () => {
    const dir = await tree();
    await build(dir, 'console.log(JSON.stringify(process.argv.slice(1)));\n');
    const r = launch(dir, 'src/main.js', 'eval', '--case', 'x');
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([path.join(dir, 'dist/src/main.js'), 'eval', '--case', 'x']);
  });

  it('refuses a build older than a source it was compiled from (a pull without npm install)', async () => {
    const dir = await tree();
    await build(dir, 'console.log("old code");\n');
    const later = new Date(Date.now() + 60_000);
    await utimes(path.join(dir, 'src/main.ts'), later, later);
    const r = launch(dir, 'src/main.js');
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('hermes: the build is older than src/main.ts: run `npm run build` (or `npm install`) and start again.\n');
  });

  it('checks against the short list of sources the build writes (dist/build-inputs.json) instead of parsing the metafile', async () => {
    const dir = await tree();
    await build(dir, 'console.log("built");\n');
    // The list names a source the metafile does not: the list is what is read.
    await writeFile(path.join(dir, 'src/only-listed.ts'), '');
    await writeFile(path.join(dir, 'dist/build-inputs.json'), JSON.stringify({ files: ['src/main.ts', 'src/only-listed.ts'] }));
    const before = new Date(Date.now() - 60_000);
    for (const f of ['src/main.ts', 'src/only-listed.ts']) await utimes(path.join(dir, f), before, before);
    expect(launch(dir, 'src/main.js').stdout).toBe('built\n');
    const later = new Date(Date.now() + 60_000);
    await utimes(path.join(dir, 'src/only-listed.ts'), later, later);
    const r = launch(dir, 'src/main.js');
    expect([r.status, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe('hermes: the build is older than src/only-listed.ts: run `npm run build` (or `npm install`) and start again.\n');
    await writeFile(path.join(dir, 'dist/build-inputs.json'), '{"inputs":{}}');
    const damaged = launch(dir, 'src/main.js');
    expect([damaged.status, damaged.stdout]).toEqual([1, '']);
    expect(damaged.stderr).toBe('hermes: the build is damaged (dist/build-inputs.json is not the list of its sources): run `npm run build` and start again.\n');
  });

  it('the build writes the short list: what the metafile\'s inputs come to', async () => {
    const meta = JSON.parse(await readFile(path.join(ROOT, 'dist/meta.json'), 'utf8')) as { inputs: Record<string, unknown> };
    const list = JSON.parse(await readFile(path.join(ROOT, 'dist/build-inputs.json'), 'utf8')) as { files: string[] };
    expect(list.files).toContain('src/main.ts');
    expect(list.files).toContain('node_modules/zod/package.json');
    expect(list.files.some((f) => f.startsWith('node_modules/') && !f.endsWith('/package.json'))).toBe(false);
    expect(new Set(list.files)).toEqual(new Set(Object.keys(meta.inputs).map((f) => /^(.*?node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(f)?.[1]?.concat('/package.json') ?? f)));
  });

  it('refuses a build older than a package it bundled, judged by the package.json npm writes with it', async () => {
    const dir = await tree();
    await mkdir(path.join(dir, 'dist/src'), { recursive: true });
    await mkdir(path.join(dir, 'node_modules/@scope/lib/dist'), { recursive: true });
    await writeFile(path.join(dir, 'node_modules/@scope/lib/dist/index.js'), '');
    await writeFile(path.join(dir, 'node_modules/@scope/lib/package.json'), '{}');
    await writeFile(path.join(dir, 'dist/src/main.js'), 'console.log("built");\n');
    await writeFile(path.join(dir, 'dist/meta.json'), JSON.stringify({ inputs: { 'src/main.ts': {}, 'node_modules/@scope/lib/dist/index.js': {} }, outputs: {} }));
    const before = new Date(Date.now() - 60_000);
    for (const f of ['src/main.ts', 'node_modules/@scope/lib/dist/index.js', 'node_modules/@scope/lib/package.json']) await utimes(path.join(dir, f), before, before);
    expect(launch(dir, 'src/main.js').stdout).toBe('built\n');
    // Another version installed without a build (npm install --ignore-scripts).
    const later = new Date(Date.now() + 60_000);
    await utimes(path.join(dir, 'node_modules/@scope/lib/package.json'), later, later);
    const r = launch(dir, 'src/main.js');
    expect([r.status, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toBe('hermes: the build is older than node_modules/@scope/lib/package.json: run `npm run build` (or `npm install`) and start again.\n');
  });
});
