import { isIP } from 'node:net';
import { Invalid } from '../lib/errors';

/**
 * The one place webhooks touch the network and the egress policy (outbound-calls.md §1). Every
 * delivery goes through `postWebhook`; every stored URL through `checkWebhookUrl`.
 * TODO(outbound): switch both to src/outbound once it is on main.
 */
export interface PostResult {
  status: number;
}

export class DeliveryFailure extends Error {}

/** The largest reply body read; the rest is dropped (a receiver's reply is not used). */
export const MAX_REPLY_BYTES = 64 * 1024;

export interface PostOptions {
  timeoutMs: number;
  fetch: typeof fetch;
}

/** POSTs `body` to `url`; redirects are not followed (a 3xx is a failed attempt), the reply is read with a cap. */
export async function postWebhook(url: string, headers: Record<string, string>, body: string, options: PostOptions): Promise<PostResult> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    const res = await options.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'org-control-plane-webhooks/1', ...headers },
      body,
      redirect: 'manual',
      signal,
    });
    if (res.body) {
      let read = 0;
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        read += value.byteLength;
        if (read > MAX_REPLY_BYTES) {
          await reader.cancel();
          break;
        }
      }
    }
    return { status: res.status };
  } catch (err) {
    const name = (err as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') throw new DeliveryFailure(`no answer within ${options.timeoutMs} ms`);
    const code = (err as { cause?: { code?: string } }).cause?.code;
    throw new DeliveryFailure(code === 'ECONNREFUSED' ? 'the connection was refused' : `could not be reached${code ? ` (${code})` : ''}`);
  }
}

function inNetwork(address: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  if (!base || isIP(base) !== 4 || isIP(address) !== 4) return false;
  const bits = Number(bitsText);
  const toInt = (a: string) => a.split('.').reduce((n, o) => (n << 8) + Number(o), 0) >>> 0;
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (toInt(address) & mask) === (toInt(base) & mask);
}

function isPublicV4(address: string): boolean {
  const [a, b] = address.split('.').map(Number) as [number, number];
  return !(a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || a >= 224);
}

/** Write-time check of an endpoint URL: https (http only inside an allowed network), no credentials, no literal private address. */
export function checkWebhookUrl(value: string, field: string[], allowedNetworks: readonly string[]): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw Invalid.at(field, 'must be an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw Invalid.at(field, 'must be an https URL');
  if (url.username || url.password) throw Invalid.at(field, 'must not contain credentials (user:password@)');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host) ? host : host === 'localhost' ? '127.0.0.1' : null;
  const listed = literal !== null && allowedNetworks.some((cidr) => inNetwork(literal, cidr));
  if (literal !== null && !listed && (isIP(literal) === 6 || !isPublicV4(literal))) {
    throw Invalid.at(field, `the address ${literal} is not allowed; outbound calls may only reach public addresses`);
  }
  if (url.protocol !== 'https:' && !listed) throw Invalid.at(field, 'must be an https URL');
}
