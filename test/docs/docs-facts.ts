import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * What the docs check compares: the settings the code reads, the ones `.env.example` and the
 * README's settings table list, the `npm run` commands the docs show, and the relative links.
 * Pure apart from reading files, so a failure message can say exactly what is missing where.
 */

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** The env families the bot reads; a constant that merely looks like one is declared, not read. */
const ENV_NAME = /\b(?:(?:HERMES|SLACK|DISCORD|OPENAI|OTEL|BRAVE)_[A-Z0-9_]*[A-Z0-9]|PORT|LOG_LEVEL)\b/g;
const DECLARED = /\b(?:const|let|var|enum|type|interface|class|function)\s+([A-Z][A-Z0-9_]*)\b/g;

function filesUnder(dir: string, ext: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p, ext));
    else if (name.endsWith(ext)) out.push(p);
  }
  return out.sort();
}

const rel = (p: string) => path.relative(ROOT, p);

/** Code without its comments: a comment may name a variable that does not exist yet. */
export function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
}

/** Every env variable name the product code mentions outside comments, with the first file that does. */
export function envNamesInCode(root = ROOT): Map<string, string> {
  const files = ['src', 'adapters', 'tools'].flatMap((d) => filesUnder(path.join(root, d), '.ts'));
  const texts = files.map((f) => [f, withoutComments(readFileSync(f, 'utf8'))] as const);
  const declared = new Set(texts.flatMap(([, t]) => [...t.matchAll(DECLARED)].map((m) => m[1]!)));
  const found = new Map<string, string>();
  for (const [file, text] of texts) {
    for (const m of text.matchAll(ENV_NAME)) {
      if (!declared.has(m[0]) && !found.has(m[0])) found.set(m[0], rel(file));
    }
  }
  return found;
}

export interface EnvExampleLine {
  name: string;
  line: number;
  commented: boolean;
}

/** `NAME=…` and `# NAME=…` lines of `.env.example`. */
export function envExampleEntries(text: string): EnvExampleLine[] {
  return text.split('\n').flatMap((raw, i) => {
    const m = /^(#\s?)?([A-Z][A-Z0-9_]*)=/.exec(raw);
    return m ? [{ name: m[2]!, line: i + 1, commented: m[1] !== undefined }] : [];
  });
}

/** Variable names in the first column of the table under the README's `## Settings` heading. */
export function readmeSettingsNames(readme: string): string[] {
  const start = readme.search(/^## Settings\s*$/m);
  if (start < 0) return [];
  const rest = readme.slice(start + 1);
  const next = rest.search(/^## /m);
  const section = next < 0 ? rest : rest.slice(0, next);
  return [...section.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/gm)].map((m) => m[1]!);
}

/** The markdown files the docs check reads: README.md and docs/**.md. */
export function docFiles(root = ROOT): string[] {
  return [path.join(root, 'README.md'), ...filesUnder(path.join(root, 'docs'), '.md')];
}

/** `npm run X` / `npm start` / `npm test` commands shown in a text, as script names. */
export function npmScriptsShown(text: string): string[] {
  const names = [...text.matchAll(/\bnpm (?:run(?:-script)?\s+(?:--silent\s+)?([a-z][\w:.-]*)|(start|test)\b)/g)].map((m) => m[1] ?? m[2]!);
  return [...new Set(names)];
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to dashes. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export function anchorsIn(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)].map((m) => anchorOf(m[1]!)));
}

/** Relative links in a markdown file that do not resolve (missing file, or missing heading). */
export function brokenLinks(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  const broken: string[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [filePart, anchor] = target.split('#') as [string, string | undefined];
    const resolved = filePart ? path.resolve(path.dirname(file), filePart) : file;
    if (!existsSync(resolved)) {
      broken.push(`${rel(file)}: link "${target}" points to ${rel(resolved)}, which does not exist`);
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !anchorsIn(readFileSync(resolved, 'utf8')).has(anchor)) {
      broken.push(`${rel(file)}: link "${target}" names a heading #${anchor} that ${rel(resolved)} does not have`);
    }
  }
  return broken;
}
