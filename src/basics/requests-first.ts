/**
 * Resolves once the I/O the event loop has already read is handled: a `setImmediate`.
 *
 * Why: an acknowledgement (Slack's 200, after the receipt is durable) runs in the I/O callback
 * that read its request, as microtasks of it. Work that can wait (the listeners after an ack, a
 * turn's start, a Web API call) resumes from I/O callbacks and from the store's commit too, and
 * without a yield it runs in the same pass, so a request read a moment later waits behind it. After
 * this yield that work runs in the loop's check phase, after every request read in this pass was
 * acknowledged; from the check phase it runs after the next poll. Nothing is skipped or reordered:
 * immediates run first in, first out, so two yields of one conversation keep their order.
 * Measured in docs/performance.md, "Round 3: acks first".
 */
export function requestsFirst(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
