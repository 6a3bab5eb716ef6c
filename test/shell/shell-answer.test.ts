import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createShellAdapter } from '../../adapters/shell/shell-adapter.js';
import type { GatewayApi, OutboundPort } from '../../src/basics/ports.js';

/** The adapter only registers its port with this gateway; nothing else is called in these tests. */
function gatewayThatKeepsThePort(): GatewayApi & { port?: OutboundPort } {
  const g: GatewayApi & { port?: OutboundPort } = {
    handleMessage: async () => 'ignored',
    handleCommand: async () => ({ kind: 'private', text: '' }),
    decideApproval: async () => ({ kind: 'unknown', text: '' }),
    registerPort: (port) => void (g.port = port),
  };
  return g;
}

describe('the terminal prints an answer as it comes', () => {
  it('one growing line, a progress note on its own line, and the rest of the final text', async () => {
    const gateway = gatewayThatKeepsThePort();
    const output = new PassThrough();
    let printed = '';
    output.on('data', (b: Buffer) => void (printed += b.toString('utf8')));
    createShellAdapter({ gateway, input: new PassThrough(), output });
    const answer = gateway.port!.openAnswer!({ platform: 'shell', workspaceId: 'local', channelId: 'terminal', isDm: true }, {});
    answer.append('Let me ');
    expect(printed).toBe('hermes> Let me ');
    answer.append('look.');
    answer.progress('running fetch_url');
    answer.append('\n\nFound');
    await answer.finish('Let me look.\n\nFound it.');
    expect(printed).toBe('hermes> Let me look.\n… running fetch_url\nhermes> Found it.\n');
    expect(answer.started).toBe(true);
  });
});
