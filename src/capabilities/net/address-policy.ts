import ipaddr from 'ipaddr.js';

/**
 * Which hosts and addresses the network tools may reach. Pure: no DNS, no sockets.
 *
 * The model can be talked into fetching anything by a web page or a message, so every spelling of
 * an internal address must land in the same verdict: `127.1`, `0177.0.0.1`, `2130706433`,
 * `0x7f.1`, `[::ffff:7f00:1]`, `[64:ff9b::a00:1]` all mean a loopback or private host. WHATWG
 * `new URL()` already canonicalises most IPv4 forms, but this module does not rely on that: allow
 * entries and hosts from elsewhere go through the same inet_aton-style parser.
 */

export type AddressKind =
  | 'public'
  | 'loopback'
  | 'private'
  | 'unique-local'
  | 'link-local'
  | 'metadata'
  | 'cgnat'
  | 'multicast'
  | 'unspecified'
  | 'broadcast'
  | 'reserved';

export interface ParsedIp {
  /** Canonical text: dotted quad for IPv4, RFC 5952 form without brackets for IPv6. */
  address: string;
  family: 4 | 6;
}

export interface AddressClass {
  kind: AddressKind;
  /** For IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4): the embedded address. */
  embedded?: string;
}

export interface AllowEntry {
  host: string;
  /** Absent: any port. */
  port?: number;
}

export type HostVerdict = { ok: true; allowed: boolean } | { ok: false; reason: string };

const HOW_TO_ALLOW =
  '(private, loopback, link-local and metadata addresses are not reachable; an operator can allow a host with HERMES_NET_ALLOW)';

// Cloud instance-metadata endpoints: AWS/GCP/Azure/OpenStack, AWS ECS, AWS IPv6, Alibaba, Oracle.
const METADATA_IPS = new Set(['169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '100.100.100.200', '192.0.0.192']);
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

const KIND_TEXT: Record<Exclude<AddressKind, 'public'>, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  'unique-local': 'a private (unique local) address',
  'link-local': 'a link-local address',
  metadata: 'a cloud metadata address',
  cgnat: 'a carrier-grade NAT (100.64.0.0/10) address',
  multicast: 'a multicast address',
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved, non-public address',
};

/** One inet_aton part: decimal, 0-prefixed octal or 0x-prefixed hex (a bare "0x" is 0, as in WHATWG). */
function parseAtonPart(part: string): number | undefined {
  if (/^0x[0-9a-f]*$/i.test(part)) return part.length === 2 ? 0 : parseInt(part.slice(2), 16);
  if (/^0[0-7]*$/.test(part)) return parseInt(part, 8);
  if (/^[1-9][0-9]*$/.test(part)) return Number(part);
  return undefined;
}

/** IPv4 in any legacy spelling (1 to 4 parts, the last filling the remaining bytes), or undefined. */
function parseLegacyIpv4(host: string): string | undefined {
  const trimmed = host.endsWith('.') ? host.slice(0, -1) : host;
  const parts = trimmed.split('.');
  if (parts.length < 1 || parts.length > 4) return undefined;
  const nums: number[] = [];
  for (const p of parts) {
    if (p.length > 40) return undefined;
    const n = parseAtonPart(p);
    if (n === undefined || !Number.isFinite(n)) return undefined;
    nums.push(n);
  }
  const last = nums.pop() as number;
  if (nums.some((n) => n > 255)) return undefined;
  const lastBytes = 4 - nums.length;
  if (last >= 256 ** lastBytes) return undefined;
  let value = last;
  nums.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

/** An IP literal (brackets, zone ids and legacy IPv4 forms accepted), canonicalised; undefined for names. */
export function parseIpLiteral(host: string): ParsedIp | undefined {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  const zone = h.indexOf('%');
  if (zone >= 0 && h.includes(':')) h = h.slice(0, zone);
  if (h.includes(':')) {
    if (!ipaddr.IPv6.isValid(h)) return undefined;
    return { address: ipaddr.IPv6.parse(h).toString(), family: 6 };
  }
  const v4 = parseLegacyIpv4(h);
  return v4 === undefined ? undefined : { address: v4, family: 4 };
}

/** Lower case, no brackets, no trailing dot; IP literals in canonical form. */
export function normalizeHost(host: string): string {
  const ip = parseIpLiteral(host);
  if (ip) return ip.address;
  let h = host.trim().toLowerCase();
  while (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

function classifyV4(ip: ipaddr.IPv4): AddressKind {
  if (METADATA_IPS.has(ip.toString())) return 'metadata';
  switch (ip.range() as string) {
    case 'unicast':
      return 'public';
    case 'loopback':
      return 'loopback';
    case 'private':
      return 'private';
    case 'linkLocal':
      return 'link-local';
    case 'carrierGradeNat':
      return 'cgnat';
    case 'multicast':
      return 'multicast';
    case 'unspecified':
      return 'unspecified';
    case 'broadcast':
      return 'broadcast';
    default:
      return 'reserved';
  }
}

function v4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

function classifyV6(ip: ipaddr.IPv6): AddressClass {
  if (METADATA_IPS.has(ip.toString())) return { kind: 'metadata' };
  const p = ip.parts as number[];
  const at = (i: number) => p[i] ?? 0;
  const embedded = (v4: ipaddr.IPv4): AddressClass => ({ kind: classifyV4(v4), embedded: v4.toString() });
  switch (ip.range() as string) {
    case 'loopback':
      return { kind: 'loopback' };
    case 'unspecified':
      return { kind: 'unspecified' };
    case 'linkLocal':
    case 'deprecatedSiteLocal':
      return { kind: 'link-local' };
    case 'uniqueLocal':
      return { kind: 'unique-local' };
    case 'multicast':
      return { kind: 'multicast' };
    case 'ipv4Mapped':
    case 'rfc6145':
      return embedded(v4FromParts(at(6), at(7)));
    case 'rfc6052':
      // 64:ff9b::/96 carries the IPv4 target in the last 32 bits; the local-use /48 is never public.
      return at(2) === 0 ? embedded(v4FromParts(at(6), at(7))) : { kind: 'reserved' };
    case '6to4':
      return embedded(v4FromParts(at(1), at(2)));
    case 'unicast':
      // Only 2000::/3 is global unicast; ::/96 (IPv4-compatible, e.g. ::7f00:1) and the rest are not.
      return (at(0) & 0xe000) === 0x2000 ? { kind: 'public' } : { kind: 'reserved' };
    default:
      return { kind: 'reserved' };
  }
}

/** Classifies a literal address (any spelling parseIpLiteral accepts). Unparseable text is 'reserved'. */
export function classifyIp(address: string): AddressClass {
  const ip = parseIpLiteral(address);
  if (!ip) return { kind: 'reserved' };
  if (ip.family === 4) return { kind: classifyV4(ipaddr.IPv4.parse(ip.address)) };
  return classifyV6(ipaddr.IPv6.parse(ip.address));
}

/** Why a host name (not an IP) is refused before any lookup, or undefined. */
export function blockedNameReason(host: string): string | undefined {
  const h = normalizeHost(host);
  if (h === 'localhost' || h.endsWith('.localhost') || h === 'localhost.localdomain') return 'a loopback host name';
  if (METADATA_NAMES.has(h)) return 'a cloud metadata host name';
  // .internal is reserved for private use (ICANN 2024); cloud providers name internal hosts there.
  if (h.endsWith('.internal')) return 'an internal-only host name';
  return undefined;
}

/** Parses HERMES_NET_ALLOW entries (`host`, `host:port`, `[v6]:port`); malformed entries are skipped. */
export function parseAllowList(entries: readonly string[]): AllowEntry[] {
  const out: AllowEntry[] = [];
  for (const raw of entries) {
    const e = raw.trim();
    if (!e) continue;
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(e) ?? (ipaddr.IPv6.isValid(e) ? [e, e] : null);
    if (!m || !m[1]) continue;
    const port = m[2] === undefined ? undefined : Number(m[2]);
    if (port !== undefined && (port < 1 || port > 65535)) continue;
    out.push({ host: normalizeHost(m[1]), port });
  }
  return out;
}

/** True when the operator allowed this host (as written in the URL, or the same IP literal) at this port. */
export function isAllowed(allow: readonly AllowEntry[], host: string, port: number): boolean {
  const h = normalizeHost(host);
  return allow.some((a) => a.host === h && (a.port === undefined || a.port === port));
}

function display(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function kindPhrase(cls: AddressClass): string {
  const what = KIND_TEXT[cls.kind as Exclude<AddressKind, 'public'>];
  return cls.embedded ? `an address embedding ${cls.embedded}, ${what}` : what;
}

/**
 * The check before any DNS: the URL's host (name or literal) and port. A literal IP is judged
 * completely here; a name that passes still needs checkResolved on every address it resolves to.
 */
export function checkHost(host: string, port: number, allow: readonly AllowEntry[]): HostVerdict {
  if (isAllowed(allow, host, port)) return { ok: true, allowed: true };
  const ip = parseIpLiteral(host);
  if (ip) {
    const cls = classifyIp(ip.address);
    if (cls.kind === 'public') return { ok: true, allowed: false };
    return { ok: false, reason: `refused: ${display(ip.address)} is ${kindPhrase(cls)} ${HOW_TO_ALLOW}` };
  }
  const why = blockedNameReason(host);
  if (why) return { ok: false, reason: `refused: ${normalizeHost(host)} is ${why} ${HOW_TO_ALLOW}` };
  return { ok: true, allowed: false };
}

/** Every address a name resolved to must be public, unless the name itself is allowed. */
export function checkResolved(
  host: string,
  port: number,
  addresses: readonly string[],
  allow: readonly AllowEntry[],
): HostVerdict {
  if (isAllowed(allow, host, port)) return { ok: true, allowed: true };
  const name = normalizeHost(host);
  if (addresses.length === 0) return { ok: false, reason: `refused: ${name} did not resolve to any address` };
  for (const a of addresses) {
    const cls = classifyIp(a);
    if (cls.kind !== 'public') {
      const ip = parseIpLiteral(a)?.address ?? a;
      return { ok: false, reason: `refused: ${name} resolves to ${display(ip)}, ${kindPhrase(cls)} ${HOW_TO_ALLOW}` };
    }
  }
  return { ok: true, allowed: false };
}
