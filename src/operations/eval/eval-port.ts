import type { ApprovalView, OutboundPort } from '../../basics/ports.js';
import type { Platform } from '../../basics/types.js';

/**
 * The chat platform an eval case talks to: it records what the bot said and which approval
 * prompts it showed, so the runner can decide them and the checks can read the answers.
 */
export interface EvalPort extends OutboundPort {
  texts: string[];
  approvals: ApprovalView[];
}

export function createEvalPort(platform: Platform): EvalPort {
  const texts: string[] = [];
  const approvals: ApprovalView[] = [];
  let refs = 0;
  return {
    platform,
    texts,
    approvals,
    async sendText(_conversation, markdown) {
      texts.push(markdown);
    },
    async showApproval(_conversation, view) {
      approvals.push(view);
      return `approval-${++refs}`;
    },
    async resolveApproval() {},
    async startWorking() {
      return async () => {};
    },
    mention: (id) => `<@${id}>`,
  };
}
