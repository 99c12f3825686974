import { randomUUID } from 'node:crypto';
import type * as Jose from 'jose';
import type { Db } from '../db/schema';
import type { SecretBox } from '../lib/crypto';
import { lazy } from '../lib/lazy';
import { SIGNING_ALG, signingKeys } from './keys';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const jose = lazy(() => require('jose') as typeof Jose);

/** Where a subject token is accepted: the token endpoint (its audience), never the API or /mcp. */
export const tokenEndpoint = (publicBaseUrl: string) => `${publicBaseUrl}/oauth/token`;

export interface SubjectTokenClaims {
  memberId: string;
  organizationId: string;
  workerId: string;
  authorizationId: string;
  scopes: string[];
  issuedAt: Date;
  expiresAt: Date;
}

/**
 * A delegation's subject token (docs/workers-and-usage.md#delegations-and-token-exchange): an RFC
 * 9068-shaped JWT for the member, signed with the service's signing key, whose audience is the
 * token endpoint (so the API and /mcp, which accept only their own audience, refuse it) and whose
 * `may_act` names the worker as the one client that may exchange it (RFC 8693 §4.4). It lives as
 * long as the delegation. The service keeps only its SHA-256, with the delegation.
 */
export async function signSubjectToken(db: Db, secrets: SecretBox, publicBaseUrl: string, claims: SubjectTokenClaims): Promise<string> {
  const keys = await signingKeys(db, secrets, claims.issuedAt);
  const jwk = keys.jwks[0]!;
  const key = await jose().importJWK(jwk as Jose.JWK, SIGNING_ALG);
  return new (jose().SignJWT)({
    client_id: claims.workerId,
    scope: claims.scopes.join(' '),
    org_id: claims.organizationId,
    authorization_id: claims.authorizationId,
    may_act: { sub: claims.workerId },
  })
    .setProtectedHeader({ alg: SIGNING_ALG, typ: 'at+jwt', kid: jwk.kid })
    .setIssuer(publicBaseUrl)
    .setAudience(tokenEndpoint(publicBaseUrl))
    .setSubject(claims.memberId)
    .setJti(randomUUID())
    .setIssuedAt(Math.floor(claims.issuedAt.getTime() / 1000))
    .setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000))
    .sign(key);
}

/** The claims a presented subject token says it has, unverified (the caller checks it against its stored hash); null when it is no JWT of that shape. */
export function readSubjectToken(token: string): { sub: string; authorizationId: string; mayAct: string | null; act: boolean; exp: number } | null {
  let payload: Jose.JWTPayload;
  try {
    payload = jose().decodeJwt(token);
  } catch {
    return null;
  }
  const { sub, authorization_id: authorizationId, may_act: mayAct, act, exp } = payload as Record<string, unknown>;
  if (typeof sub !== 'string' || typeof exp !== 'number') return null;
  const mayActSub = typeof mayAct === 'object' && mayAct !== null && typeof (mayAct as { sub?: unknown }).sub === 'string' ? (mayAct as { sub: string }).sub : null;
  return { sub, authorizationId: typeof authorizationId === 'string' ? authorizationId : '', mayAct: mayActSub, act: act !== undefined, exp };
}
