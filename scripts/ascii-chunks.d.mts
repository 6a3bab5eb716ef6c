import type { Plugin } from 'esbuild';

/** esbuild plugin: rewrites the .js files a build wrote to ASCII-only (needs `metafile: true`). */
export declare const asciiOutput: Plugin;
/** `code` with its non-ASCII characters escaped where that keeps its meaning; `kept`: how many runs stayed (tagged templates). */
export declare function asciiOnly(code: string, name?: string): { code: string; kept: number };
