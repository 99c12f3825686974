import { Resolver } from 'node:dns/promises';

/**
 * TXT lookups for domain verification, through DNS_SERVERS when set (else the system's
 * resolvers), so tests and split-horizon deployments can point it at their own server. One try
 * with a short timeout: a verification that fails can simply be retried by the administrator.
 */
export const CHALLENGE_PREFIX = '_cp-challenge';

export function challengeName(domain: string): string {
  return `${CHALLENGE_PREFIX}.${domain}`;
}

export type TxtLookup = { found: true; values: string[] } | { found: false; reason: string };

export async function lookupTxt(servers: string[], name: string, timeoutMs = 5_000): Promise<TxtLookup> {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  if (servers.length > 0) resolver.setServers(servers);
  try {
    // A TXT record may be split in several strings of up to 255 bytes: they form one value.
    const records = await resolver.resolveTxt(name);
    return { found: true, values: records.map((chunks) => chunks.join('')) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    const reason =
      code === 'ENOTFOUND' ? 'the name does not exist (NXDOMAIN)' : code === 'ENODATA' ? 'the name has no TXT record' : code === 'ETIMEOUT' ? 'the DNS server did not answer' : `the lookup failed (${code})`;
    return { found: false, reason };
  }
}
