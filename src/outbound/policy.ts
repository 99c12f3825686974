import ipaddr from 'ipaddr.js';
import { Invalid } from '../lib/errors';

/**
 * Which addresses a tenant-supplied URL may reach (outbound-calls.md §1). Only globally routable
 * unicast is allowed; loopback, RFC 1918, link-local (cloud metadata), CGNAT, unspecified,
 * multicast, broadcast, reserved, IPv6 unique-local and link-local are refused, also when wrapped
 * in IPv6 (IPv4-mapped, NAT64, 6to4). Networks listed in OUTBOUND_ALLOWED_NETWORKS are allowed.
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

/** IPv6 forms that carry an IPv4 address, and where its four bytes are. */
const EMBEDS_IPV4: Record<string, [number, number]> = { ipv4Mapped: [12, 16], rfc6145: [12, 16], rfc6052: [12, 16], '6to4': [2, 6] };

/** The range that decides: for the IPv6 forms that wrap an IPv4 address, that address's range. */
function effectiveRange(address: ipaddr.IPv4 | ipaddr.IPv6): string {
  const range = address.range();
  const embedded = address.kind() === 'ipv6' ? EMBEDS_IPV4[range] : undefined;
  if (!embedded) return range;
  const inner = new ipaddr.IPv4(address.toByteArray().slice(...embedded)).range();
  return inner === 'unicast' ? 'unicast' : `${range} of ${inner}`;
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

function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}
