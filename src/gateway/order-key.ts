/**
 * Where a piece of work stands in its conversation's line, as fixed-width text that sorts the way
 * the platform ordered the posts: microseconds since the epoch (17 digits) and a tie-break. Each
 * adapter turns its own order (Slack `ts`, a Discord snowflake) into this form, so the queue
 * compares posts by when the platform says they were written, not by when an instance got to
 * writing them down. Work that has no platform post (an approval resume, a scheduled run) is
 * placed by the clock.
 */
const WIDTH = 17;

export function orderKey(epochMicros: bigint, tieBreak = ''): string {
  const micros = epochMicros < 0n ? 0n : epochMicros;
  return `${micros.toString().padStart(WIDTH, '0')}:${tieBreak}`;
}

/** Work placed by the clock: after every post written before `nowMs`. */
export function clockOrderKey(nowMs: number, tieBreak = ''): string {
  return orderKey(BigInt(Math.floor(nowMs)) * 1000n, tieBreak);
}
