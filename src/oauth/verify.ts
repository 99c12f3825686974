import type * as Jose from 'jose';
import type { Db } from '../db/schema';
import { lazy } from '../lib/lazy';
import { SIGNING_ALG, verificationKey } from './keys';

// jose (ESM) loads on the first access token the service verifies.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const jose = lazy(() => require('jose') as typeof Jose);

/** The claims of an access token of ours (RFC 9068; docs/oauth.md#access-tokens). */
export interface AccessTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  exp: number;
  iat: number;
  jti: string;
  client_id: string;
  scope: string[];
  org_id: string;
  /** The member's authorization (`oag_`) a token of the authorization-code or device flow was issued under; absent for client credentials. */
  authorization_id?: string;
  /** RFC 8693 §4.1: the actor of a token exchanged for a member (a worker, docs/workers-and-usage.md#workers-as-oauth-clients). */
  act?: { sub: string };
}

/** A compact JWS: three base64url parts. Bearer values of other kinds (session tokens, API keys) have no dot. */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_TOKEN_LENGTH = 8192;

export function looksLikeJwt(value: string): boolean {
  return value.length <= MAX_TOKEN_LENGTH && COMPACT_JWS.test(value);
}

/**
 * An access token this service signed, unexpired at `now`, issued by `issuer` and, when given,
 * for `audience`: its claims, else null (any failure: bad signature, unknown or retired key,
 * another type, missing claims). The key is the one its `kid` names (./keys.ts); no database
 * round trip unless the kid is new to this process.
 */
export async function verifyAccessToken(db: Db, token: string, now: Date, expected: { issuer: string; audience?: string }): Promise<AccessTokenClaims | null> {
  if (!looksLikeJwt(token)) return null;
  const { decodeProtectedHeader, jwtVerify } = jose();
  let kid: unknown;
  try {
    const header = decodeProtectedHeader(token);
    if (header.alg !== SIGNING_ALG || header.typ !== 'at+jwt') return null;
    kid = header.kid;
  } catch {
    return null;
  }
  if (typeof kid !== 'string' || kid.length === 0 || kid.length > 128) return null;
  const key = await verificationKey(db, kid, now);
  if (!key) return null;
  let payload: Jose.JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      issuer: expected.issuer,
      audience: expected.audience,
      typ: 'at+jwt',
      algorithms: [SIGNING_ALG],
      currentDate: now,
      requiredClaims: ['sub', 'jti', 'exp', 'iat'],
    }));
  } catch {
    return null;
  }
  const { sub, aud, exp, iat, jti, client_id: clientId, scope, org_id: orgId, authorization_id: authorizationId, act } = payload as Record<string, unknown>;
  const audience = Array.isArray(aud) ? aud[0] : aud;
  if (typeof sub !== 'string' || typeof jti !== 'string' || typeof clientId !== 'string' || typeof orgId !== 'string' || typeof audience !== 'string') return null;
  if (typeof exp !== 'number' || typeof iat !== 'number' || (scope !== undefined && typeof scope !== 'string')) return null;
  if (authorizationId !== undefined && typeof authorizationId !== 'string') return null;
  const actor = act === undefined ? undefined : typeof act === 'object' && act !== null && typeof (act as { sub?: unknown }).sub === 'string' ? (act as { sub: string }).sub : null;
  if (actor === null) return null;
  return {
    iss: expected.issuer,
    sub,
    aud: audience,
    exp,
    iat,
    jti,
    client_id: clientId,
    scope: scope ? scope.split(' ').filter(Boolean) : [],
    org_id: orgId,
    ...(authorizationId !== undefined ? { authorization_id: authorizationId } : {}),
    ...(actor !== undefined ? { act: { sub: actor } } : {}),
  };
}
