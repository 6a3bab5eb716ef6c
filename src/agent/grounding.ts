import type { ChatMessage } from '../basics/types.js';

/** HERMES_GROUNDING: `retry` gives an ungrounded answer one more step; `off` never checks. */
export type GroundingMode = 'retry' | 'off';

export function ungroundedClaims(_answer: string, _messages: readonly ChatMessage[]): string[] {
  return [];
}
