import ipaddr from 'ipaddr.js';
import { Invalid } from '../lib/errors';

/**
 * Which addresses a tenant-supplied URL may reach (docs/egress.md#egress-policy). Only globally routable
 * unicast is allowed; loopback, RFC 1918, link-local (cloud metadata), CGNAT, unspecified,
 * multicast, broadcast, reserved, IPv6 unique-local and link-local are refused, also when wrapped
 * in IPv6 (IPv4-mapped and -compatible, NAT64, 6to4, Teredo, ISATAP). Networks listed in OUTBOUND_ALLOWED_NETWORKS are allowed.
 * Classification is ipaddr.js's range table, not hand-written ranges.
 */
type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export class EgressPolicy {
  private readonly networks: Cidr[];

  constructor(readonly allowedNetworks: readonly string[] = []) {
    this.networks = allowedNetworks.map((cidr) => ipaddr.parseCIDR(cidr));
  }

  /** Why `address` (an IP literal) may not be reached, or null when it may. */
  refusal(address: string): string | null {
    const parsed = parseAddress(address);
    if (!parsed) return `${address} is not an IP address`;
    if (this.lists(parsed)) return null;
    const range = effectiveRange(parsed);
    return range === 'unicast' ? null : `the address ${address} is not allowed (${range})`;
  }

  /** Whether OUTBOUND_ALLOWED_NETWORKS lists `address` (an IP literal). */
  isListed(address: string): boolean {
    const parsed = parseAddress(address);
    return parsed !== null && this.lists(parsed);
  }

  private lists(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    const forms = [address];
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) forms.push((address as ipaddr.IPv6).toIPv4Address());
    return forms.some((form) => this.networks.some((cidr) => cidr[0].kind() === form.kind() && form.match(cidr)));
  }
}

function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  try {
    return ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return null;
  }
}

/**
 * The IPv4 addresses an IPv6 address carries, and the form that carries them. ipaddr.js names
 * most forms (IPv4-mapped, RFC 6145, NAT64, 6to4, Teredo); two it calls plain unicast are found by
 * their bytes: IPv4-compatible `::a.b.c.d` (RFC 4291 §2.5.5.1, deprecated; `[::127.0.0.1]`
 * normalises to `[::7f00:1]`) and ISATAP interface identifiers (`…:0:5efe:a.b.c.d`, RFC 5214).
 */
function embeddedIPv4(address: ipaddr.IPv6, range: string): { form: string; addresses: ipaddr.IPv4[] } | null {
  const bytes = address.toByteArray();
  const v4 = (at: number, xor = 0) => new ipaddr.IPv4(bytes.slice(at, at + 4).map((b) => b ^ xor));
  switch (range) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return { form: range, addresses: [v4(12)] };
    case 'rfc6052':
      // 64:ff9b::/96 (RFC 6052) carries the address in its last four bytes; 64:ff9b:1::/48 (RFC
      // 8215) is for local use, where the operator chooses the layout: no layout is assumed.
      return bytes.slice(4, 12).every((b) => b === 0) ? { form: range, addresses: [v4(12)] } : { form: 'local-use NAT64 (64:ff9b:1::/48)', addresses: [] };
    case '6to4':
      return { form: range, addresses: [v4(2)] };
    case 'teredo':
      // RFC 4380 §4: the server's address, then the client's, obfuscated (every bit inverted).
      return { form: range, addresses: [v4(4), v4(12, 0xff)] };
  }
  if (bytes.slice(0, 12).every((b) => b === 0)) return { form: 'ipv4Compatible (deprecated)', addresses: [] };
  if ((bytes[8] === 0 || bytes[8] === 2) && bytes[9] === 0 && bytes[10] === 0x5e && bytes[11] === 0xfe) return { form: 'ISATAP', addresses: [v4(12)] };
  return null;
}

/**
 * The range that decides: for the IPv6 forms that carry an IPv4 address, that address's range (a
 * form whose layout is not fixed, or that is deprecated, is refused whatever it carries).
 */
function effectiveRange(address: ipaddr.IPv4 | ipaddr.IPv6): string {
  const range = address.range();
  if (address.kind() !== 'ipv6' || (range !== 'unicast' && range !== 'reserved' && !['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo'].includes(range))) return range;
  const embedded = embeddedIPv4(address as ipaddr.IPv6, range);
  if (!embedded) return range;
  if (embedded.addresses.length === 0) return embedded.form;
  const refused = embedded.addresses.map((a) => a.range()).find((r) => r !== 'unicast');
  // What it carries can refuse an address, never allow one its own range refuses (2001:db8::/32).
  if (refused !== undefined) return `${embedded.form} of ${refused}`;
  return range === 'reserved' ? range : 'unicast';
}

/** Parses OUTBOUND_ALLOWED_NETWORKS (comma-separated CIDRs); throws naming the bad entry. */
export function parseAllowedNetworks(raw: string | undefined): string[] {
  const entries = (raw ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  return entries.map((entry) => {
    try {
      const [address, bits] = ipaddr.parseCIDR(entry);
      return `${address.toString()}/${bits}`;
    } catch {
      throw new Error(`"${entry}" is not a CIDR like 10.20.0.0/16 or fd00::/8`);
    }
  });
}

export interface UrlRules {
  /** Webhooks, LLM providers, SSO: https only, unless the host is a literal in an allowed network. */
  httpsOnly?: boolean;
}

/**
 * Write-time check of a tenant-supplied URL: http(s) only (or https only), no credentials, and a
 * host that is not a literal disallowed address (nor `localhost`). Throws 400 `invalid_request`
 * naming `field` (e.g. ['body', 'runtimeUrl']). A name resolving to a disallowed address is caught
 * at connect time by the outbound client instead.
 */
export function checkTenantUrl(policy: EgressPolicy, value: string, field: string[], rules: UrlRules = {}): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw Invalid.at(field, 'must be an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw Invalid.at(field, 'must be an http or https URL');
  if (url.username || url.password) throw Invalid.at(field, 'must not contain credentials (user:password@)');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = ipaddr.isValid(host) ? host : isLocalhostName(host) ? '127.0.0.1' : null;
  if (literal !== null) {
    const refusal = policy.refusal(literal);
    if (refusal) throw Invalid.at(field, `${refusal}; outbound calls may only reach public addresses`);
  }
  if (rules.httpsOnly && url.protocol !== 'https:' && (literal === null || !policy.isListed(literal))) {
    throw Invalid.at(field, 'must be an https URL');
  }
  return url;
}

/**
 * A URL the service hands to browsers and never calls itself (a marketplace logo): https, or http
 * when the host is a literal inside OUTBOUND_ALLOWED_NETWORKS (the rule of https-only tenant URLs),
 * and no credentials. `javascript:`, `data:`, `file:` and the like are refused by the scheme rule.
 */
export function checkBrowserUrl(policy: EgressPolicy, value: string, field: string[]): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw Invalid.at(field, 'must be an absolute URL');
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const listed = url.protocol === 'http:' && ipaddr.isValid(host) && policy.isListed(host);
  if (url.protocol !== 'https:' && !listed) throw Invalid.at(field, 'must be an https URL');
  if (url.username || url.password) throw Invalid.at(field, 'must not contain credentials (user:password@)');
  return value;
}

function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}
