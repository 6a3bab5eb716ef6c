/**
 * What happens to a message that arrives while its conversation's turn runs (HERMES_BUSY_MODE,
 * and per channel through the channel policy's `busy_mode`):
 * - `steer`: it is added to the running turn before the turn's next model call, and marked seen;
 * - `queue`: it waits and gets a turn of its own once the running one ends;
 * - `interrupt`: the running turn is stopped, and the new message starts one.
 */
export const BUSY_MODES = ['steer', 'queue', 'interrupt'] as const;
export type BusyMode = (typeof BUSY_MODES)[number];
export const DEFAULT_BUSY_MODE: BusyMode = 'steer';
