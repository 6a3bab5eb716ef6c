import { createInterface } from 'node:readline';
import os from 'node:os';
import type { Readable, Writable } from 'node:stream';
import type { Adapter, ApprovalResolution, ApprovalView, GatewayApi, OutboundPort } from '../../src/gateway/ports.js';
import type { Conversation, Speaker } from '../../src/types.js';
import { approvalSourcesLine } from '../../src/gateway/user-messages.js';

export interface ShellAdapterOptions {
  gateway: GatewayApi;
  input: Readable;
  output: Writable;
  /** Called when input ends and every answer has been printed (main exits then). */
  onEnd?: () => void;
  userName?: string;
}

const OUTCOME_WORD: Record<ApprovalResolution['outcome'], string> = {
  approved: 'approved',
  denied: 'denied',
  expired: 'expired (not run)',
  cancelled: 'cancelled (not run)',
};

/**
 * Terminal chat on the same core. Lines are handled one at a time: a line is sent only after the
 * previous one was answered or asked for approval, so piped scripts ("task\ny\n") read the way a
 * person types. While an approval waits, the next line answers it (y = approve, anything else = deny).
 */
export function createShellAdapter(opts: ShellAdapterOptions): Adapter {
  const user = opts.userName ?? (os.userInfo().username || 'you');
  const conversation: Conversation = { platform: 'shell', workspaceId: 'local', channelId: 'terminal', isDm: true };
  const speaker: Speaker = { platform: 'shell', workspaceId: 'local', userId: user, displayName: user };
  const out = (text: string) => opts.output.write(text.endsWith('\n') ? text : `${text}\n`);

  let settle: (() => void) | undefined;
  let pendingApproval: string | undefined;
  let counter = 0;
  let lines: AsyncIterator<string> | undefined;

  const waitForAnswer = () => new Promise<void>((resolve) => { settle = resolve; });
  const settled = () => {
    const s = settle;
    settle = undefined;
    s?.();
  };

  const port: OutboundPort = {
    platform: 'shell',
    promptsVanish: true,
    async sendText(_c, markdown) {
      out(`hermes> ${markdown}`);
      settled();
    },
    async showApproval(_c, view: ApprovalView) {
      pendingApproval = view.id;
      const provenance = view.sources?.length ? `${approvalSourcesLine(view.sources)}\n` : '';
      out(`${view.description ? `${view.description}
` : ''}hermes wants to run ${view.toolName} with:
${view.argsJson}
(arguments sha256 ${view.argsDigest})
${provenance}Approve? [y/N]`);
      settled();
      return view.id;
    },
    async resolveApproval(_c, _ref, view, resolution) {
      const who = resolution.decidedBy ? ` by ${resolution.decidedBy.displayName ?? resolution.decidedBy.userId}` : '';
      out(`(${view.toolName}: ${OUTCOME_WORD[resolution.outcome]}${resolution.outcome === 'approved' || resolution.outcome === 'denied' ? who : ''})`);
      if (pendingApproval === view.id) pendingApproval = undefined;
    },
    async startWorking() {
      return async () => undefined;
    },
    async showProgress(_c, note) {
      out(`… ${note}`);
    },
    mention: (userId) => `@${userId}`,
  };
  opts.gateway.registerPort(port);

  async function handleLine(raw: string): Promise<void> {
    const line = raw.trim();
    if (!line) return;
    if (pendingApproval) {
      const id = pendingApproval;
      pendingApproval = undefined;
      const decision = /^(y|yes)$/i.test(line) ? 'approve' : 'deny';
      const done = waitForAnswer();
      const result = await opts.gateway.decideApproval({ approvalId: id, decision, decidedBy: speaker });
      if (result.kind !== 'applied') {
        out(`hermes> ${'text' in result ? result.text : `already ${result.outcome}`}`);
        settled();
      }
      await done;
      return;
    }
    if (line.startsWith('/')) {
      const text = line.replace(/^\/(hermes\s+)?/, '');
      const done = waitForAnswer();
      const reply = await opts.gateway.handleCommand({ conversation, speaker, text });
      if (reply.kind === 'private') {
        out(reply.text);
        settled();
      }
      await done;
      return;
    }
    const done = waitForAnswer();
    const result = await opts.gateway.handleMessage({ id: `shell:${process.pid}:${Date.now()}:${counter++}`, conversation, speaker, text: line, mentioned: true });
    if (result !== 'queued') settled();
    await done;
  }

  return {
    port,
    async start() {
      const rl = createInterface({ input: opts.input, terminal: false, crlfDelay: Infinity });
      lines = rl[Symbol.asyncIterator]();
      void (async () => {
        try {
          for (;;) {
            const next = await lines!.next();
            if (next.done) break;
            await handleLine(next.value);
          }
        } finally {
          if (pendingApproval) out('(input ended with an approval still waiting; it stays pending until it expires)');
          opts.onEnd?.();
        }
      })();
    },
    async stop() {
      settled();
      await lines?.return?.();
    },
  };
}
