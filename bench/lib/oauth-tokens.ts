import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT, type JWK } from 'jose';
import * as oauth from 'openid-client';
import { hashPassword, SecretBox } from '../../src/lib/crypto';
import { newId } from '../../src/lib/ids';
import { signingKeys } from '../../src/oauth/keys';
import { insert as insertAuthorization } from '../../src/authorizations/store';
import { SECRET_KEY, type BenchContext } from './context';
import type { Target } from './procs';
import type { SeededOrg } from '../seed/org';

/**
 * Tokens of the service for scenarios 18 and 19, made the ways its clients get them: an
 * organization client registered through the API; access tokens signed with the service's own
 * key under an authorization row written with the consent step's store (as scenario 16 does);
 * refresh tokens through the whole authorization-code + PKCE flow (openid-client, the hosted
 * sign-in and consent pages); a worker's delegation through the API.
 */
export async function json(res: Response, what: string): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${what}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** The service's issuer (PUBLIC_BASE_URL's default, `http://localhost:<port>`). */
export const issuerOf = (service: Target) => `http://localhost:${service.port}`;

export async function registerClient(service: Target, sessionToken: string, input: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${service.url}/v1/oauth-clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sessionToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(input),
  });
  return ((await json(res, 'register the client')).item as { id: string }).id;
}

/** The caller's access token for `resource` (RFC 9068 JWT, RS256 with the service's signing key), through a new organization client. */
export async function memberAccessToken(ctx: BenchContext, service: Target, org: SeededOrg, options: { resource: string; scopes: string[] }): Promise<string> {
  const clientId = await registerClient(service, org.callerToken, { name: 'Bench dashboard', type: 'public', redirectUris: ['http://127.0.0.1/cb'], scopes: options.scopes });
  await json(await fetch(`${service.url}/oauth/jwks`), 'JWKS');
  const db = ctx.scratch.database.db;
  const now = new Date();
  const authorization = await insertAuthorization(
    db,
    { id: newId('oauthAuthorization'), organizationId: org.organizationId, memberId: org.callerMemberId, clientId, clientType: 'organization', clientName: 'Bench dashboard', scopes: options.scopes, resource: options.resource, grantKey: null, expiresAt: new Date(now.getTime() + 86_400_000) },
    now,
  );
  const jwk = (await signingKeys(db, new SecretBox(SECRET_KEY), now)).jwks[0]!;
  const seconds = Math.floor(now.getTime() / 1000);
  return new SignJWT({ client_id: clientId, scope: options.scopes.join(' '), org_id: org.organizationId, authorization_id: authorization.id })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid })
    .setIssuer(issuerOf(service))
    .setAudience(options.resource)
    .setSubject(org.callerMemberId)
    .setJti(randomUUID())
    .setIssuedAt(seconds)
    .setExpirationTime(seconds + 3600)
    .sign(await importJWK(jwk as JWK, 'RS256'));
}

const PASSWORD = 'bench-password-0123456789';
const REDIRECT = 'http://127.0.0.1:9/callback';

/**
 * `count` refresh tokens of the caller for one public organization client (members.read,
 * offline_access), each from its own authorization-code + PKCE flow: openid-client builds the
 * request and redeems the code; a person signs in once at the hosted page (the caller's password
 * set for the bench) and approves at the consent page each time.
 */
export async function refreshTokens(ctx: BenchContext, service: Target, org: SeededOrg, count: number): Promise<{ clientId: string; resource: string; tokens: string[] }> {
  const db = ctx.scratch.database.db;
  const caller = await db.selectFrom('members').innerJoin('users', 'users.id', 'members.user_id').select(['users.id', 'users.email']).where('members.id', '=', org.callerMemberId).executeTakeFirstOrThrow();
  await db.updateTable('users').set({ password_hash: await hashPassword(PASSWORD) }).where('id', '=', caller.id).execute();
  const clientId = await registerClient(service, org.callerToken, { name: 'Bench agent', type: 'public', redirectUris: [REDIRECT], scopes: ['members.read', 'offline_access'] });
  const base = issuerOf(service);
  const resource = `${base}/v1`;
  const config = await oauth.discovery(new URL(base), clientId, undefined, oauth.None(), { algorithm: 'oauth2', execute: [oauth.allowInsecureRequests] });
  const jar = new Map<string, string>();
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const verifier = oauth.randomPKCECodeVerifier();
    const state = oauth.randomState();
    const url = oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'members.read offline_access', state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource });
    const back = await person(base, url.href, jar, { email: caller.email, organizationId: org.organizationId });
    const answer = await oauth.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state }, { resource });
    if (!answer.refresh_token) throw new Error(`the code flow answered no refresh token: ${JSON.stringify(answer)}`);
    tokens.push(answer.refresh_token);
  }
  return { clientId, resource, tokens };
}

/** The person at the hosted pages: follows redirects with a cookie jar, signs in when asked, approves for the organization; the URL back at the client. */
async function person(base: string, start: string, jar: Map<string, string>, who: { email: string; organizationId: string }): Promise<URL> {
  let res = await step(start, jar);
  for (let hops = 0; hops < 20; hops++) {
    const location = res.headers.get('location');
    if (location) {
      const next = new URL(location, base);
      if (next.origin !== base) return next;
      res = await step(next.href, jar);
      continue;
    }
    const page = await res.text();
    if (res.status !== 200) throw new Error(`the hosted pages answered ${res.status}: ${page.slice(0, 300)}`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
    const signIn = /action="([^"]+\/sign-in)"/.exec(page)?.[1];
    const consent = /action="([^"]+\/consent)"/.exec(page)?.[1];
    if (signIn && csrf) res = await step(new URL(signIn, base).href, jar, new URLSearchParams({ csrf, email: who.email, password: PASSWORD }));
    else if (consent && csrf) res = await step(new URL(consent, base).href, jar, new URLSearchParams({ csrf, decision: 'approve', organizationId: who.organizationId }));
    else throw new Error(`a hosted page with no form to go on: ${page.slice(0, 300)}`);
  }
  throw new Error('too many redirects at the hosted pages');
}

async function step(url: string, jar: Map<string, string>, body?: URLSearchParams): Promise<Response> {
  const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(url, { method: body ? 'POST' : 'GET', body, redirect: 'manual', headers: cookie ? { cookie } : {} });
  for (const line of res.headers.getSetCookie()) {
    const pair = line.split(';')[0]!;
    const eq = pair.indexOf('=');
    const [name, value] = [pair.slice(0, eq), pair.slice(eq + 1)];
    if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
    else jar.set(name, value);
  }
  return res;
}

/** A worker with a ceiling and a delegation of the caller to it (API calls, as test/api's token-exchange tests make them): its id, host token (its client secret) and the subject token. */
export async function workerDelegation(service: Target, org: SeededOrg, scopes: string[]): Promise<{ workerId: string; hostToken: string; subjectToken: string }> {
  const headers = { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' };
  const created = await json(await fetch(`${service.url}/v1/workers`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench-agent' }) }), 'create the worker');
  const workerId = (created.item as { id: string }).id;
  await json(await fetch(`${service.url}/v1/workers/${workerId}/ceiling`, { method: 'PUT', headers, body: JSON.stringify({ scopes }) }), 'set its ceiling');
  const delegation = await json(await fetch(`${service.url}/v1/workers/${workerId}/delegations`, { method: 'POST', headers, body: JSON.stringify({ scopes }) }), 'delegate to it');
  return { workerId, hostToken: created.hostToken as string, subjectToken: delegation.subjectToken as string };
}

export const basicAuth = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
