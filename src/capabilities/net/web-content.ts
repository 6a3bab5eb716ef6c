import { createRequire } from 'node:module';
import type { HtmlToTextOptions } from 'html-to-text';

/**
 * Turning fetched bytes into text the model can read. Marking it as the web's words, not the
 * user's, is src/basics/safety/outside-text.ts's job (the executor wraps results a tool declares outside).
 */

// html-to-text (and the HTML parser under it) loads on the first page or search result, not at start.
const requireLazily = createRequire(import.meta.url);
const convert = (html: string, options: HtmlToTextOptions): string => (requireLazily('html-to-text') as typeof import('html-to-text')).convert(html, options);

const HTML_OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  selectors: [
    { selector: 'nav', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'noscript', format: 'skip' },
    { selector: 'template', format: 'skip' },
    { selector: 'svg', format: 'skip' },
    { selector: 'iframe', format: 'skip' },
    { selector: 'img', format: 'skip' },
    { selector: 'picture', format: 'skip' },
    { selector: 'video', format: 'skip' },
    { selector: 'form', format: 'skip' },
    { selector: 'button', format: 'skip' },
    // Links stay compact: the href only when it adds something, no in-page anchors.
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true, noAnchorUrl: true, linkBrackets: ['(', ')'] } },
    { selector: 'h1', options: { uppercase: false } },
    { selector: 'h2', options: { uppercase: false } },
    { selector: 'h3', options: { uppercase: false } },
    { selector: 'h4', options: { uppercase: false } },
    { selector: 'h5', options: { uppercase: false } },
    { selector: 'h6', options: { uppercase: false } },
    { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
  ],
};

/** The charset from Content-Type, else a <meta charset> near the top of an HTML page, else UTF-8. */
export function decodeBody(body: Buffer, contentType: string): string {
  let charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (!charset && /html/i.test(contentType)) {
    const head = body.subarray(0, 2048).toString('latin1');
    charset = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  }
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

function tidy(text: string): string {
  return text
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function resolveHref(href: string, baseUrl: string): string {
  try {
    return new URL(href, baseUrl).toString();
  } catch {
    return href;
  }
}

export function htmlToText(html: string, baseUrl?: string): string {
  // html-to-text's own baseUrl only prefixes "/paths"; resolve every relative link properly instead.
  const options: HtmlToTextOptions = baseUrl
    ? {
        ...HTML_OPTIONS,
        selectors: HTML_OPTIONS.selectors?.map((s) =>
          s.selector === 'a' ? { ...s, options: { ...s.options, pathRewrite: (href: string) => resolveHref(href, baseUrl) } } : s,
        ),
      }
    : HTML_OPTIONS;
  return tidy(convert(html, options));
}

export function htmlTitle(html: string): string | undefined {
  const title = convert(html, { wordwrap: false, baseElements: { selectors: ['title'], returnDomByDefault: false } });
  const t = title.replace(/\s+/g, ' ').trim();
  return t ? t.slice(0, 300) : undefined;
}

/** Strips markup from a short snippet (search results carry <strong> highlights). */
export function snippetText(html: string): string {
  return convert(html, { wordwrap: false, selectors: [{ selector: 'a', options: { ignoreHref: true } }] })
    .replace(/\s+/g, ' ')
    .trim();
}

/** Cuts at max characters with a marker saying how much was left out and how to get more. */
export function truncateText(text: string, max: number, hint: string): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  const cut = text.slice(0, max);
  return { text: `${cut}\n[… truncated: showing ${max} of ${text.length} characters; ${hint}]`, truncated: true };
}
