import { Writable } from 'node:stream';
import type { CommandInvocation, CommandReply, GatewayApi, OutboundPort } from '../../src/basics/ports.js';
import { createLogger } from '../../src/basics/log.js';
import type { InboundMessage } from '../../src/basics/types.js';

/** Test doubles for adapter-only tests that need no model: a recording gateway and a log sink. */

/** A gateway stand-in that records what the adapter hands over; enough for connection tests. */
export function recordingGateway(reply: CommandReply = { kind: 'private', text: 'ok' }): GatewayApi & { messages: InboundMessage[]; commands: CommandInvocation[]; ports: OutboundPort[] } {
  const messages: InboundMessage[] = [];
  const commands: CommandInvocation[] = [];
  const ports: OutboundPort[] = [];
  return {
    messages,
    commands,
    ports,
    handleMessage: async (m) => {
      messages.push(m);
      return 'queued';
    },
    handleCommand: async (c) => {
      commands.push(c);
      return reply;
    },
    decideApproval: async () => ({ kind: 'unknown', text: 'unknown' }),
    registerPort: (p) => void ports.push(p),
  };
}

export function captureLog(): { log: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('info', sink), lines };
}
