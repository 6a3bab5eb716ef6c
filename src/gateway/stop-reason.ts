import type { Speaker } from '../basics/types.js';

/**
 * Why a turn's signal was aborted on someone's behalf (turn-stop.ts writes it, the turn driver
 * reads it to say who stopped the answer). Any other abort reason is shutdown or a lost claim.
 */
export interface StopReason {
  kind: 'stopped';
  by: Speaker;
  /** 'button' and 'command' come from a person; 'interrupt' from a new message (busy mode). */
  via: 'button' | 'command' | 'interrupt';
}

export function isStopReason(v: unknown): v is StopReason {
  return typeof v === 'object' && v !== null && (v as StopReason).kind === 'stopped' && typeof (v as StopReason).by === 'object';
}
