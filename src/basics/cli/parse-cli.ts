import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { applyEnvFile } from '../env-file.js';

/** What the command-line tools (eval, replay, stats) read and write, passed in so tests drive them. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: Record<string, string | undefined>;
  cwd: string;
  now?: () => number;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Flags through node:util's strict parser, with the conventions every tool shares: `--help`
 * prints the usage (exit 0), an unknown or malformed flag prints the problem and the usage (exit 2).
 */
export function parseCli<const O extends Options>(argv: string[], options: O, usage: string, io: CliIo, allowPositionals = false) {
  type Config = { args: string[]; options: O; allowPositionals: boolean; strict: true };
  let parsed: ReturnType<typeof parseArgs<Config>>;
  try {
    parsed = parseArgs<Config>({ args: argv, options, allowPositionals, strict: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n${usage}`);
    return { exit: 2 } as const;
  }
  if ((parsed.values as Record<string, unknown>).help) {
    io.out(usage);
    return { exit: 0 } as const;
  }
  return { args: parsed };
}

/** Runs `main` when the file is the process entry point (`tsx src/…-cli.ts`), exiting with its code. */
export function runIfEntryPoint(moduleUrl: string, main: (argv: string[], io: CliIo) => Promise<number>, name: string): void {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(path.resolve(process.argv[1])).href) return;
  runCli(process.argv.slice(2), main, name);
}

/** Runs a command-line tool's `main` on the real process: its exit code, or 1 with the stack. */
export function runCli(argv: string[], main: (argv: string[], io: CliIo) => Promise<number>, name: string): void {
  // The same .env the bot reads, so `npm run eval` uses the model the bot uses.
  const envFile = applyEnvFile(process.env, process.cwd());
  if (envFile.kind === 'error') {
    console.error(`config error: ${envFile.message}`);
    process.exit(2);
  }
  const io: CliIo = { out: (l) => console.log(l), err: (l) => console.error(l), env: process.env, cwd: process.cwd() };
  main(argv, io).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`${name} failed: ${(err as Error).stack ?? String(err)}`);
      process.exit(1);
    },
  );
}
