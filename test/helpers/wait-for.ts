/**
 * Waits until `condition` holds, asking again every `everyMs`: for state outside the test's reach
 * that announces no event (another process's files or HTTP answers, a socket that closes). Where
 * something emits an event or resolves a promise, await that instead. Bounded: past `timeoutMs`
 * it throws, naming what it waited for.
 */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, opts: { timeoutMs?: number; everyMs?: number } = {}): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const everyMs = opts.everyMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
