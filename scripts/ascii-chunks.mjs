// Makes esbuild's output ASCII-only. esbuild escapes non-ASCII in strings and names, but keeps it
// in the comments it carries over (inside object literals, before arguments) and in regular
// expression literals. One such character makes V8 hold the whole file as a two-byte string and
// Node's ESM loader decode it on TextDecoder's slow path: for dist/src/main.js (~480 KB) about
// twice the decode time, and twice the memory for the source every start keeps.
//
// What is changed, found with TypeScript's parser: a character in a comment, a regular expression,
// a string or an untagged template becomes its \u escape (the same value; in a regular expression
// with the u or v flag a surrogate pair of escapes is one code point). A tagged template keeps its
// characters: its tag may read the raw text. Columns move only on the lines that change.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** esbuild plugin: rewrites the .js files a build wrote (it needs `metafile: true`). */
export const asciiOutput = {
  name: 'ascii-output',
  setup(b) {
    b.onEnd((result) => {
      const cwd = b.initialOptions.absWorkingDir ?? process.cwd();
      for (const out of Object.keys(result.metafile?.outputs ?? {})) {
        if (!/\.m?js$/.test(out)) continue;
        const file = path.resolve(cwd, out);
        const code = readFileSync(file, 'utf8');
        const ascii = asciiOnly(code, out).code;
        if (ascii !== code) writeFileSync(file, ascii);
      }
    });
  },
};

/** Each UTF-16 unit of `text` as \uXXXX. */
const escape = (text) => [...text].map((ch) => [...Array(ch.length).keys()].map((i) => `\\u${ch.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')}`).join('')).join('');

/** `code` with its non-ASCII characters escaped where that keeps its meaning; `kept`: what stayed (tagged templates). */
export function asciiOnly(code, name = 'chunk.js') {
  const runs = [...code.matchAll(/[^\x00-\x7F]+/g)];
  if (runs.length === 0) return { code, kept: 0 };
  const file = ts.createSourceFile(name, code, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  let out = '';
  let at = 0;
  let kept = 0;
  for (const run of runs) {
    const where = contextAt(file, run.index);
    out += code.slice(at, run.index);
    at = run.index + run[0].length;
    if (where === 'keep') {
      out += run[0];
      kept += 1;
    } else if (where === 'escaped-literal' && /(?:^|[^\\])(?:\\\\)*\\$/.test(out)) {
      // `\é` (an identity escape) means é: its escape replaces the backslash too.
      out = out.slice(0, -1) + escape(run[0]);
    } else out += escape(run[0]);
  }
  return { code: out + code.slice(at), kept };
}

const TEMPLATE_PARTS = new Set([ts.SyntaxKind.NoSubstitutionTemplateLiteral, ts.SyntaxKind.TemplateHead, ts.SyntaxKind.TemplateMiddle, ts.SyntaxKind.TemplateTail]);
const LITERALS = new Set([ts.SyntaxKind.RegularExpressionLiteral, ts.SyntaxKind.StringLiteral, ...TEMPLATE_PARTS]);

/** 'comment' (trivia), 'escaped-literal' (a literal where \u reads as the character) or 'keep'. */
function contextAt(file, pos) {
  let node = file;
  const parents = [];
  for (;;) {
    const child = node.getChildren(file).find((c) => c.getStart(file) <= pos && pos < c.end);
    if (!child) break;
    parents.push(node);
    node = child;
  }
  if (pos < node.getStart(file) || node === file) return 'comment';
  if (!LITERALS.has(node.kind)) return node.getChildren(file).length > 0 ? 'comment' : 'keep';
  if (TEMPLATE_PARTS.has(node.kind) && parents.some((p) => p.kind === ts.SyntaxKind.TaggedTemplateExpression && p.template.pos <= pos && pos < p.template.end)) return 'keep';
  return 'escaped-literal';
}
