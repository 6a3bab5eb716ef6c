import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIPv6 } from 'node:net';

/**
 * Who may see the dashboard: whoever knows HERMES_DASHBOARD_TOKEN. The token is compared in
 * constant time over fixed-length hashes (so neither its content nor its length leaks through
 * timing); a browser then holds a random session id, never the token itself.
 */

export function tokenMatches(given: string, token: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

export interface Sessions {
  create(): string;
  valid(id: string | undefined): boolean;
  drop(id: string): void;
  /** The form token a signed-in page embeds in its POST forms (bound to the session). */
  formToken(id: string): string;
  formTokenValid(id: string, given: string | undefined): boolean;
}

/**
 * Sessions live in memory: a restart signs everyone out (they sign in again with the token), and
 * sign-out really ends a session. At most `max` are kept; the oldest goes first.
 */
export function createSessions(opts: { now: () => number; ttlMs: number; max?: number }): Sessions {
  const max = opts.max ?? 1000;
  const expiry = new Map<string, number>();
  const formKey = randomBytes(32);
  const mac = (id: string) => createHmac('sha256', formKey).update(id).digest('base64url');
  return {
    create() {
      for (const [id, until] of expiry) if (until <= opts.now()) expiry.delete(id);
      while (expiry.size >= max) expiry.delete(expiry.keys().next().value!);
      const id = randomBytes(32).toString('base64url');
      expiry.set(id, opts.now() + opts.ttlMs);
      return id;
    },
    valid(id) {
      if (!id) return false;
      const until = expiry.get(id);
      if (until === undefined) return false;
      if (until <= opts.now()) {
        expiry.delete(id);
        return false;
      }
      return true;
    },
    drop(id) {
      expiry.delete(id);
    },
    formToken: mac,
    formTokenValid(id, given) {
      if (!given) return false;
      const want = Buffer.from(mac(id));
      const got = Buffer.from(given);
      return got.length === want.length && timingSafeEqual(got, want);
    },
  };
}

export interface SignInLimiter {
  /** Milliseconds until this address may try again; 0 when it may try now. */
  blockedFor(address: string): number;
  failed(address: string): void;
  succeeded(address: string): void;
}

/**
 * Failed sign-ins per client address (the TCP peer: a proxy in front makes every client one
 * address, which then errs on the side of blocking). After `maxFailures` within `windowMs` the
 * address is refused until the window of its first failure ends, even with the right token.
 */
/**
 * The network a sign-in attempt is counted against: an IPv4 address as it is (also when written
 * IPv4-mapped, ::ffff:a.b.c.d), an IPv6 address by its /64. One IPv6 host usually holds a whole
 * /64, so keyed on the exact address a guesser changed address after each few failures and was
 * never locked out.
 */
export function lockoutKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIPv6(address)) return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
  return address;
}

function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.split('%')[0]!.toLowerCase().split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((h) => h.replace(/^0+(?=.)/, ''));
}

export function createSignInLimiter(opts: { now: () => number; maxFailures?: number; windowMs?: number; maxAddresses?: number }): SignInLimiter {
  const maxFailures = opts.maxFailures ?? 5;
  const windowMs = opts.windowMs ?? 15 * 60_000;
  const maxAddresses = opts.maxAddresses ?? 10_000;
  const failures = new Map<string, { first: number; count: number }>();
  const current = (address: string) => {
    const f = failures.get(address);
    if (f && opts.now() - f.first >= windowMs) {
      failures.delete(address);
      return undefined;
    }
    return f;
  };
  return {
    blockedFor(address) {
      const f = current(lockoutKey(address));
      return f && f.count >= maxFailures ? f.first + windowMs - opts.now() : 0;
    },
    failed(peer) {
      const address = lockoutKey(peer);
      const f = current(address);
      if (f) f.count++;
      else {
        if (failures.size >= maxAddresses) {
          for (const [a, x] of failures) if (opts.now() - x.first >= windowMs) failures.delete(a);
          // Still full: forget the oldest rather than grow without bound.
          if (failures.size >= maxAddresses) failures.delete(failures.keys().next().value!);
        }
        failures.set(address, { first: opts.now(), count: 1 });
      }
    },
    succeeded(address) {
      failures.delete(lockoutKey(address));
    },
  };
}
