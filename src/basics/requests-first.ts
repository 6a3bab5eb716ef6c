/**
 * Acknowledgements before other work, on the one event loop that does both.
 *
 * An acknowledgement (Slack's 200, after the receipt is durable) runs in the I/O callback that read
 * its request, as microtasks of it. Work that can wait resumes from I/O callbacks and from the
 * store's commit too, and without a yield it runs in the same pass, so a request read a moment
 * later waits behind it. Measured in docs/performance.md, "Round 3: acks first" and "Round 3: the
 * opening burst".
 *
 * Two yields, for two kinds of work:
 * - `requestsFirst()`, for the steps of work already under way (a claimed job's start, a Web API
 *   call of a running turn): one `setImmediate`, so it runs in the loop's check phase, after every
 *   request read in this pass was answered.
 * - `requestsDrained()`, for new work a request brings (Bolt's listeners after the ack, a message's
 *   hand-over to the gateway, which starts a turn): it waits while requests keep arriving, until the
 *   loop has made a pass that read none, or for at most HOLD_MAX_MS. A burst of deliveries (a busy
 *   workspace, Slack redelivering after an outage, the bench's opening round) is then answered first
 *   and the turns it brings start after it, instead of each turn's start pushing every request still
 *   in the kernel further back. The bound keeps a steady stream of requests from starving the
 *   turns: held work runs HOLD_MAX_MS after it was held at the latest, the oldest first.
 *
 * Nothing is skipped or reordered: immediates run first in, first out, and held work is released in
 * the order it was held, so two messages of one conversation keep their order.
 */
export function requestsFirst(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * How long new work may be held while requests keep arriving. A burst of 1,000 deliveries costs the
 * bot about 0.3–0.6 s of CPU to acknowledge (docs/performance.md, "Round 3: the opening burst");
 * Slack waits 3 s for an acknowledgement and nothing for a turn's start, so holding the turns for
 * the length of a burst costs a reply that much at most and buys the burst its acknowledgements.
 */
export const HOLD_MAX_MS = 500;

export interface RequestGate {
  /** A request was read (the HTTP server calls this for every request, before its handler). */
  arrived(): void;
  /** Resolves once a pass of the loop read no request, or after the hold bound. */
  drained(): Promise<void>;
  /** Work held now (tests and diagnostics). */
  held(): number;
}

export interface RequestGateOptions {
  holdMaxMs?: number;
  now?: () => number;
  /** Runs `fn` in the next check phase (setImmediate in production). */
  nextPass?: (fn: () => void) => void;
}

export function createRequestGate(opts: RequestGateOptions = {}): RequestGate {
  const holdMaxMs = opts.holdMaxMs ?? HOLD_MAX_MS;
  const now = opts.now ?? (() => performance.now());
  const nextPass = opts.nextPass ?? ((fn: () => void) => void setImmediate(fn));
  const queue: Array<{ since: number; resolve: () => void }> = [];
  let arrivals = 0;
  let arrivalsAtLastPass = 0;
  let scheduled = false;

  const pass = () => {
    scheduled = false;
    const arriving = arrivals !== arrivalsAtLastPass;
    arrivalsAtLastPass = arrivals;
    // Quiet pass: everything held goes. Otherwise only what has waited its bound, oldest first.
    const expired = now() - holdMaxMs;
    let n = 0;
    if (!arriving) n = queue.length;
    else while (n < queue.length && queue[n]!.since <= expired) n += 1;
    for (const w of queue.splice(0, n)) w.resolve();
    if (queue.length > 0) schedule();
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    nextPass(pass);
  };

  return {
    arrived: () => {
      arrivals += 1;
    },
    drained: () =>
      new Promise<void>((resolve) => {
        queue.push({ since: now(), resolve });
        schedule();
      }),
    held: () => queue.length,
  };
}

/** The process's gate: one event loop, so one. The HTTP server counts its requests here. */
export const requestGate: RequestGate = createRequestGate();

export function requestsDrained(): Promise<void> {
  return requestGate.drained();
}
