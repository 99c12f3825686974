import type { AppDeps } from '../domain/deps';
import { checkTenantUrl, OutboundError } from '../outbound';

/**
 * The two egress calls LLM providers make, both through the shared egress policy (src/outbound):
 * the write-time check of `baseUrl` (https only, unless the host is a literal inside
 * OUTBOUND_ALLOWED_NETWORKS; no literal private, loopback, link-local or CGNAT address) and the
 * model-list GET (resolved address checked at connect time, no redirects, timeout, capped body).
 */
export class EgressFailure extends Error {}

export interface ProviderReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text(): string;
}

/** Larger model lists are refused while streaming. */
export const MAX_REPLY_BYTES = 4 * 1024 * 1024;

export function checkBaseUrl(deps: AppDeps, value: string, field: string[]): void {
  checkTenantUrl(deps.outbound.policy, value, field, { httpsOnly: true });
}

export async function getJson(deps: AppDeps, url: URL, headers: Record<string, string>, timeoutMs: number): Promise<ProviderReply> {
  try {
    return await deps.outbound.request(url, { method: 'GET', headers, timeoutMs, maxBytes: MAX_REPLY_BYTES });
  } catch (err) {
    // The policy's messages name the address or the timeout, never a header (the key is one).
    if (err instanceof OutboundError) throw new EgressFailure(err.kind === 'timeout' ? `did not answer within ${timeoutMs} ms` : err.message);
    throw err;
  }
}
