import { parseCli, runIfEntryPoint, type CliIo } from '../../../src/basics/cli/parse-cli.js';
import { startFakeOpenAI } from './fake-openai.js';
import { demoReply } from './demo-rules.js';

/**
 * `npm run fake-model`: the test suite's scripted OpenAI-compatible server on 127.0.0.1, answering
 * a few phrases (demo-rules.ts), so the chat can be tried with no model server. A development aid:
 * it says so at start, and nothing in the product ever points at it by default.
 */

const USAGE = `Usage: npm run fake-model [-- --port N]

Starts a scripted stand-in for a language model on 127.0.0.1 (default port 4010), for trying
hermes offline. It is a development aid that understands a few phrases, not a model.`;

export async function main(argv: string[], io: CliIo, untilStopped: Promise<void> = stopSignal()): Promise<number> {
  const parsed = parseCli(argv, { port: { type: 'string' }, help: { type: 'boolean' } }, USAGE, io);
  if (parsed.exit !== undefined) return parsed.exit;
  const port = Number(parsed.args.values.port ?? 4010);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.err(`--port ${parsed.args.values.port} is not a TCP port: use 1-65535.\n${USAGE}`);
    return 2;
  }
  let sinkUrl = '';
  let fake;
  try {
    fake = await startFakeOpenAI({ port, sink: true, handler: (req) => demoReply(req, sinkUrl) });
  } catch (err) {
    io.err(`fake-model: cannot listen on 127.0.0.1:${port} (${(err as Error).message}); pick another with: npm run fake-model -- --port 4011`);
    return 2;
  }
  const origin = fake.url.replace(/\/v1$/, '');
  sinkUrl = `${origin}/sink`;
  const hostPort = origin.replace(/^http:\/\//, '');
  io.out(`fake-model: a scripted stand-in for a language model, listening on ${fake.url}`);
  io.out('It is a development aid for trying hermes offline: it understands a few phrases, nothing more.');
  io.out('In another terminal, start the chat against it:');
  io.out(`  OPENAI_BASE_URL=${fake.url} HERMES_NET_ALLOW=${hostPort} npm run chat`);
  io.out('(HERMES_NET_ALLOW lets the demo webhook reach this server\'s /sink.) Ctrl-C stops it.');
  await untilStopped;
  await fake.close();
  return 0;
}

function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

runIfEntryPoint(import.meta.url, (argv, io) => main(argv, io), 'fake-model');
