/**
 * A controller for one request through the openai SDK, aborted when the caller's signal aborts and
 * unlinked from it by `unlink()` once the request is over. The SDK adds an abort listener to the
 * signal it is given and never removes it, so handing it a long-lived signal (a turn's, the
 * embedding queue's) would keep every call's listener and SDK controller for the signal's life.
 * Not AbortSignal.any(): Node keeps a composite signal with an abort listener alive until it fires.
 */
export function callSignal(signal: AbortSignal | undefined): { controller: AbortController; unlink(): void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort();
  if (signal?.aborted) controller.abort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  return { controller, unlink: () => signal?.removeEventListener('abort', onAbort) };
}
