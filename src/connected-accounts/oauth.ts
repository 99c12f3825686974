import { createHash, randomBytes } from 'node:crypto';
import { hmacBase64url, safeEqual, sha256Hex } from '../lib/crypto';
import { OutboundError, type OutboundRequest } from '../outbound';

/**
 * The OAuth 2 pieces both providers share: PKCE (RFC 7636, S256), a signed `state`, and the token
 * endpoint (RFC 6749 §4.1.3 and §6, form-encoded, client_secret_post). They are small enough to
 * keep here over our own transports, so every call has our timeout and a tenant's token URL goes
 * through the egress policy (src/outbound); a library client (openid-client) would bring its own
 * HTTP stack outside both.
 */
export interface Pkce {
  verifier: string;
  challenge: string;
}

export function newPkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier, 'ascii').digest('base64url') };
}

/**
 * `state` = 256 random bits + an HMAC over them and the provider, so a forged or cross-provider
 * state is refused before the database is asked; the database holds only its SHA-256.
 */
export function newState(key: Buffer, provider: string): { state: string; hash: string } {
  const nonce = randomBytes(32).toString('base64url');
  return { state: `${nonce}.${hmacBase64url(key, `${provider}:${nonce}`)}`, hash: sha256Hex(nonce) };
}

/** The stored hash of a state, or null when its signature does not verify. */
export function verifyState(key: Buffer, provider: string, state: string): string | null {
  const [nonce, mac, ...rest] = state.split('.');
  if (!nonce || !mac || rest.length > 0) return null;
  return safeEqual(mac, hmacBase64url(key, `${provider}:${nonce}`)) ? sha256Hex(nonce) : null;
}

export function authorizeUrl(endpoint: string, params: Record<string, string>): string {
  const url = new URL(endpoint);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

export interface TokenSet {
  accessToken: string;
  refreshToken: string | null;
  /** null when the server gave no `expires_in` (the token is used until refused). */
  expiresAt: Date | null;
  scopes: string[];
}

/** Why a token call failed; the message never carries a token, a code or a secret. */
export class TokenEndpointError extends Error {
  constructor(
    readonly kind: 'status' | 'timeout' | 'network' | 'unreadable',
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

const MAX_REPLY_BYTES = 1_048_576;

export interface TokenRequest {
  url: string;
  params: Record<string, string>;
  timeoutMs: number;
  now: Date;
  /** Scopes to record when the reply has no `scope` (RFC 6749: then the requested ones were granted). */
  requestedScopes: string[];
}

/**
 * How a token request travels: `deps.outbound.request` for a tenant-supplied token URL (egress
 * policy), `trustedTransport(deps.fetch)` for an operator-configured one (the suite's login URL).
 */
export type TokenTransport = (url: string, init: OutboundRequest) => Promise<{ status: number; text(): string }>;

/** A transport over plain fetch, for URLs from settings; same timeout, cap and no redirects. */
export function trustedTransport(fetchFn: typeof fetch): TokenTransport {
  return async (url, init) => {
    const signal = AbortSignal.timeout(init.timeoutMs);
    try {
      const res = await fetchFn(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body, redirect: 'manual', signal });
      const text = await res.text();
      if (Buffer.byteLength(text) > init.maxBytes) throw new OutboundError('too_large', `the reply is larger than ${init.maxBytes} bytes`);
      return { status: res.status, text: () => text };
    } catch (err) {
      if (err instanceof OutboundError) throw err;
      if (signal.aborted) throw new OutboundError('timeout', `no answer within ${init.timeoutMs} ms`);
      throw new OutboundError('unreachable', `could not be reached (${(err as Error).name})`);
    }
  };
}

/** POSTs a token request and reads the token set; any failure is a TokenEndpointError. */
export async function requestToken(transport: TokenTransport, request: TokenRequest): Promise<TokenSet> {
  let status: number;
  let text: string;
  try {
    const res = await transport(request.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(request.params).toString(),
      timeoutMs: request.timeoutMs,
      maxBytes: MAX_REPLY_BYTES,
    });
    status = res.status;
    text = res.text();
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    if (err.kind === 'timeout') throw new TokenEndpointError('timeout', `the token endpoint did not answer within ${request.timeoutMs} ms`);
    throw new TokenEndpointError('network', `the token endpoint could not be called: ${err.message}`);
  }
  let body: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    body = null;
  }
  if (status < 200 || status > 299) {
    const code = typeof body?.error === 'string' ? ` (${body.error.slice(0, 64)})` : '';
    throw new TokenEndpointError('status', `the token endpoint answered ${status}${code}`, status);
  }
  const accessToken = body?.access_token;
  if (!body || typeof accessToken !== 'string' || accessToken.length === 0) {
    throw new TokenEndpointError('unreadable', `the token endpoint answered ${status} without a readable access_token`, status);
  }
  const expiresIn = Number(body.expires_in);
  const refreshToken = typeof body.refresh_token === 'string' && body.refresh_token.length > 0 ? body.refresh_token : null;
  const scope = typeof body.scope === 'string' ? body.scope.split(' ').filter(Boolean) : request.requestedScopes;
  return {
    accessToken,
    refreshToken,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(request.now.getTime() + expiresIn * 1000) : null,
    scopes: scope,
  };
}
