import type { BuildOptions, Plugin } from 'esbuild';

/** Packages bundled into the build instead of loaded from node_modules. */
export declare const BUNDLED: Set<string>;
/** Leaves every package external except those in BUNDLED. */
export declare const packagesExternal: Plugin;
/** The esbuild options of the bot's build, without its entries and output (bench/compile.ts shares them). */
export declare const BOT_BUILD_OPTIONS: BuildOptions;
