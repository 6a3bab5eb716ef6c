import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ROOT, anchorOf, brokenLinks, docFiles, envExampleEntries, envNamesInCode, npmScriptsShown, readmeSettingsNames,
} from './docs-facts.js';

/**
 * The docs stay true to the code: every setting the code reads is listed (in `.env.example`,
 * commented out, and in the README's settings table), nothing listed is gone from the code,
 * every `npm run` command shown exists, every relative link resolves, and the performance page
 * shows the latest benchmark file. Each failure line says what is missing where.
 */

const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8');
const inCode = envNamesInCode();
const example = envExampleEntries(read('.env.example'));
const exampleNames = new Set(example.map((e) => e.name));
const tableNames = new Set(readmeSettingsNames(read('README.md')));

describe('settings', () => {
  it('finds the settings the code reads (sanity: the scan works)', () => {
    for (const name of ['OPENAI_API_KEY', 'HERMES_DATA_DIR', 'SLACK_BOT_TOKEN', 'DISCORD_TOKEN', 'PORT', 'LOG_LEVEL']) expect(inCode.has(name), name).toBe(true);
    expect(inCode.has('SLACK_CHUNK_CHARS'), 'a declared constant is not a setting').toBe(false);
  });

  it('every variable the code reads is in .env.example', () => {
    const missing = [...inCode].filter(([name]) => !exampleNames.has(name)).map(([name, file]) => `${name} (read in ${file}) is missing from .env.example: add "# ${name}=<default>" with a comment line above it`);
    expect(missing).toEqual([]);
  });

  it('every variable the code reads is in the README settings table', () => {
    const missing = [...inCode].filter(([name]) => !tableNames.has(name)).map(([name, file]) => `${name} (read in ${file}) is missing from the table under "## Settings" in README.md: add a row | \`${name}\` | default | meaning |`);
    expect(missing).toEqual([]);
  });

  it('nothing listed is unknown to the code', () => {
    const stale = [
      ...[...exampleNames].filter((n) => !inCode.has(n)).map((n) => `${n} is in .env.example but no code in src/, adapters/ or tools/ reads it: remove it or fix its name`),
      ...[...tableNames].filter((n) => !inCode.has(n)).map((n) => `${n} is in the README settings table but no code in src/, adapters/ or tools/ reads it: remove the row or fix its name`),
    ];
    expect(stale).toEqual([]);
  });

  it('.env.example sets nothing: every variable is commented out, so an env file never blanks a default', () => {
    const active = example.filter((e) => !e.commented).map((e) => `.env.example line ${e.line}: ${e.name} is not commented out; write it as "# ${e.name}=<default>"`);
    expect(active).toEqual([]);
  });
});

describe('commands and links', () => {
  const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);

  it('every npm command the docs show exists in package.json', () => {
    const missing = docFiles().flatMap((f) =>
      npmScriptsShown(readFileSync(f, 'utf8'))
        .filter((s) => !scripts.includes(s))
        .map((s) => `${path.relative(ROOT, f)} shows "npm run ${s}", but package.json has no script "${s}"`),
    );
    expect(missing).toEqual([]);
  });

  it('every relative link in README.md and docs/ resolves', () => {
    expect(docFiles().flatMap((f) => brokenLinks(f))).toEqual([]);
  });

  it('docs/performance.md shows bench/results/latest.md as it is', () => {
    const page = read('docs/performance.md');
    const m = /<!-- bench\/results\/latest\.md: begin -->\n([\s\S]*?)\n<!-- bench\/results\/latest\.md: end -->/.exec(page);
    expect(m, 'docs/performance.md lost its "<!-- bench/results/latest.md: begin/end -->" markers').not.toBeNull();
    expect(m![1]!.trim() === read('bench/results/latest.md').trim(), 'docs/performance.md: paste bench/results/latest.md between its markers').toBe(true);
  });
});

describe('the checks themselves', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hermes-docs-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads env names, not constants that look like them', () => {
    mkdirSync(path.join(dir, 'src'), { recursive: true });
    writeFileSync(path.join(dir, 'src', 'a.ts'), "export const SLACK_LIMIT = 5;\nconst x = env.HERMES_NEW_THING ?? SLACK_LIMIT;\nget('OTEL_EXPORTER_OTLP_ENDPOINT');\n/** HERMES_LATER, once it exists */\n  // HERMES_SOMEDAY too\nconst u = 'http://x'; // HERMES_NOT_A_COMMENT_LINE\n");
    expect([...envNamesInCode(dir).keys()].sort()).toEqual(['HERMES_NEW_THING', 'HERMES_NOT_A_COMMENT_LINE', 'OTEL_EXPORTER_OTLP_ENDPOINT']);
  });

  it('reads .env.example lines, the README table and npm commands', () => {
    expect(envExampleEntries('# comment\nA_B=1\n# C_D=2\n#not a var\n')).toEqual([{ name: 'A_B', line: 2, commented: false }, { name: 'C_D', line: 3, commented: true }]);
    expect(readmeSettingsNames('## Settings\n| variable |\n|---|\n| `X_Y` | 1 |\n## Next\n| `Z` | 2 |\n')).toEqual(['X_Y']);
    expect(npmScriptsShown('npm run chat; npm run --silent eval -- --x; npm start, npm test, npm install')).toEqual(['chat', 'eval', 'start', 'test']);
  });

  it('finds a missing file and a missing heading', () => {
    writeFileSync(path.join(dir, 'b.md'), '# Per-tool settings (`hermes.config.yaml`)\n');
    writeFileSync(path.join(dir, 'a.md'), '[ok](b.md#per-tool-settings-hermesconfigyaml) [gone](c.md) [bad](b.md#nope) [web](https://x.org/y)\n');
    expect(anchorOf('Per-tool settings (`hermes.config.yaml`)')).toBe('per-tool-settings-hermesconfigyaml');
    const broken = brokenLinks(path.join(dir, 'a.md'));
    expect(broken).toHaveLength(2);
    expect(broken[0]).toMatch(/"c\.md".*does not exist/);
    expect(broken[1]).toMatch(/#nope/);
  });
});
