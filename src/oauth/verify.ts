import { verify as verifySignature } from 'node:crypto';
import type { Db } from '../db/schema';
import { SIGNING_ALG, verificationKey } from './keys';

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

/** A base64url part as a JSON object, else null. */
function jsonPart(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Tokens whose signature verified, by their exact text, with their kid and payload: a token a
 * client sends again (every request until it expires) costs a lookup instead of a signature check
 * and two JSON parses. Only a verified token gets in; what depends on time or on the request is
 * checked on every use as on the first (its key still verifying, expiry, issuer, audience). At
 * most VERIFIED_MAX, the oldest leaving first.
 */
const VERIFIED_MAX = 4096;
const verified = new Map<string, { kid: string; payload: Record<string, unknown> }>();

/** The payload of a token signed by a key of ours that verifies at `now`, else null. */
async function signedPayload(db: Db, token: string, now: Date): Promise<Record<string, unknown> | null> {
  const known = verified.get(token);
  if (known) return (await verificationKey(db, known.kid, now)) ? known.payload : null;
  const [headerPart, payloadPart, signaturePart] = token.split('.') as [string, string, string];
  const header = jsonPart(headerPart);
  if (!header || header.alg !== SIGNING_ALG || header.typ !== 'at+jwt' || header.crit !== undefined) return null;
  const kid = header.kid;
  if (typeof kid !== 'string' || kid.length === 0 || kid.length > 128) return null;
  const key = await verificationKey(db, kid, now);
  if (!key) return null;
  let valid = false;
  try {
    valid = verifySignature('sha256', Buffer.from(`${headerPart}.${payloadPart}`, 'ascii'), key, Buffer.from(signaturePart, 'base64url'));
  } catch {
    return null;
  }
  const payload = valid ? jsonPart(payloadPart) : null;
  if (!payload) return null;
  if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
  verified.set(token, { kid, payload });
  return payload;
}

/**
 * An access token this service signed, unexpired at `now`, issued by `issuer` and, when given,
 * for `audience`: its claims, else null (any failure: bad signature, unknown or retired key,
 * another type, missing claims). The key is the one its `kid` names (./keys.ts); no database
 * round trip unless the kid is new to this process.
 *
 * The JWS is checked with node:crypto on the cached KeyObject (RS256 is RSASSA-PKCS1-v1_5 with
 * SHA-256, RFC 7518 §3.3), by the rules of RFC 7515/7519 a JWT library applies to such a token:
 * the header's `alg` and `typ` exactly ours, no `crit` (no extension is understood), the payload a
 * JSON object, `iss`, `aud` (a string or an array holding it), `exp` after now, `nbf` (if any) not
 * after now, `iat` a number. jose's jwtVerify did the same through WebCrypto, at about three times
 * the CPU per token (bench/README.md, scenario 16).
 */
export async function verifyAccessToken(db: Db, token: string, now: Date, expected: { issuer: string; audience?: string }): Promise<AccessTokenClaims | null> {
  if (!looksLikeJwt(token)) return null;
  const payload = await signedPayload(db, token, now);
  if (!payload) return null;
  const { iss, sub, aud, exp, iat, nbf, jti, client_id: clientId, scope, org_id: orgId, authorization_id: authorizationId, act } = payload;
  const seconds = Math.floor(now.getTime() / 1000);
  if (iss !== expected.issuer || typeof exp !== 'number' || exp <= seconds || typeof iat !== 'number') return null;
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > seconds)) return null;
  const audiences = Array.isArray(aud) ? aud : [aud];
  if (expected.audience !== undefined && !audiences.includes(expected.audience)) return null;
  const audience = audiences[0];
  if (typeof sub !== 'string' || typeof jti !== 'string' || typeof clientId !== 'string' || typeof orgId !== 'string' || typeof audience !== 'string') return null;
  if (scope !== undefined && typeof scope !== 'string') return null;
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
