import type { OutboundPort } from '../src/basics/ports.js';

const TURN_TIMEOUT_MS = 30_000;

/** Answers delivered to the port resolve the waiter registered for that channel. */
export function waitingPort(): { port: OutboundPort; wait(channelId: string): Promise<string> } {
  const waiters = new Map<string, (text: string) => void>();
  const port: OutboundPort = {
    platform: 'slack',
    async sendText(c, text) {
      waiters.get(c.channelId)?.(text);
      waiters.delete(c.channelId);
    },
    async showApproval() {
      throw new Error('the bench turn has no approvals');
    },
    async resolveApproval() {},
    async startWorking() {
      return async () => {};
    },
    mention: (id) => `<@${id}>`,
  };
  return {
    port,
    wait: (channelId) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer in ${channelId} within ${TURN_TIMEOUT_MS} ms`)), TURN_TIMEOUT_MS);
        waiters.set(channelId, (t) => {
          clearTimeout(timer);
          resolve(t);
        });
      }),
  };
}

