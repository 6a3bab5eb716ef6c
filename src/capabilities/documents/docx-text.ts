import { createRequire } from 'node:module';
import type { FormatCallback, HtmlToTextOptions } from 'html-to-text';

/**
 * A Word document's HTML (as mammoth writes it: plain, well-formed, no styling) → text with its
 * sections marked: headings become Markdown headings (`## Results`), lists keep their bullets and
 * tables their rows, so the model can tell structure from body text and cite "the Results section".
 */

const requireLazily = createRequire(import.meta.url);
const convert = (html: string, options: HtmlToTextOptions): string => (requireLazily('html-to-text') as typeof import('html-to-text')).convert(html, options);

const heading = (level: number): FormatCallback => (elem, walk, builder) => {
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addInline(`${'#'.repeat(level)} `);
  walk(elem.children, builder);
  builder.closeBlock({ trailingLineBreaks: 1 });
};

const OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  formatters: Object.fromEntries([1, 2, 3, 4, 5, 6].map((n) => [`heading${n}`, heading(n)])),
  selectors: [
    ...[1, 2, 3, 4, 5, 6].map((n) => ({ selector: `h${n}`, format: `heading${n}` })),
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true, noAnchorUrl: true, linkBrackets: ['(', ')'] as [string, string] } },
    { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
  ],
};

export function docxHtmlToText(html: string): string {
  return convert(html, OPTIONS).replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
}
