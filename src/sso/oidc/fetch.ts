import type { Outbound } from '../../outbound';

/** What openid-client hands its fetch hook (oauth4webapi's CustomFetchOptions, loosely typed). */
interface FetchOptions {
  method: string;
  headers: Record<string, string> | Headers;
  body?: unknown;
}

/** Discovery documents, JWKS, token and UserInfo replies are small; anything larger is refused. */
const MAX_REPLY_BYTES = 512 * 1024;

/**
 * openid-client's `customFetch`, routed through the egress policy (docs/egress.md#egress-policy): the
 * issuer is tenant data, so every call — discovery, JWKS, token, UserInfo — checks the address it
 * connects to, follows no redirect and is bounded in time and size. An OutboundError propagates
 * (openid-client keeps it as the cause) so the caller can say why.
 */
export function outboundFetch(outbound: Outbound, timeoutMs: number) {
  return async (url: string, options: FetchOptions): Promise<Response> => {
    const headers: Record<string, string> = {};
    new Headers(options.headers as ConstructorParameters<typeof Headers>[0]).forEach((value, key) => {
      headers[key] = value;
    });
    const body = options.body === undefined || options.body === null ? undefined : String(options.body);
    const res = await outbound.request(url, {
      method: options.method as 'GET' | 'POST',
      headers,
      body,
      timeoutMs,
      maxBytes: MAX_REPLY_BYTES,
    });
    const replyHeaders = new Headers();
    for (const [key, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) replyHeaders.append(key, v);
    }
    const empty = res.status === 204 || res.status === 304;
    return new Response(empty ? null : new Uint8Array(res.body), { status: res.status, headers: replyHeaders });
  };
}
