import { randomBytes } from 'node:crypto';
import { newId } from '../../src/lib/ids';
import type { TestApp } from './app';
import { createOrganization, bearer, type OrgOwner } from './factories';
import type { OidcIdp, IdpAccount } from '../fakes/oidc-idp';

/**
 * SSO sign-in tests through the HTTP API: an organization with a verified domain and an OIDC
 * connection to an in-process oidc-provider, accounts added to that provider per test, and the
 * browser's round trip (start → provider login → callback).
 */
export const PUBLIC_BASE_URL = 'https://cp.example.test';
export const RETURN_ORIGIN = 'https://app.example.test';
export const OIDC_REDIRECT_URI = `${PUBLIC_BASE_URL}/v1/auth/sso/oidc/callback`;
export const IDP_CLIENT = { clientId: 'cp-sso-client', clientSecret: 'cp-sso-client-secret-0123456789abcdef', redirectUris: [OIDC_REDIRECT_URI] };
export const SSO_ENV = { PUBLIC_BASE_URL, SSO_RETURN_ORIGINS: RETURN_ORIGIN };

export interface SsoOrg {
  owner: OrgOwner;
  domain: string;
  connectionId: string;
}

/** A domain of its own per test (a domain is verified by at most one organization). */
export function uniqueDomain(): string {
  return `corp-${randomBytes(4).toString('hex')}.test`;
}

/** Marks a domain verified for the organization (DNS verification is tested on its own). */
export async function verifyDomain(t: TestApp, organizationId: string, domain: string): Promise<void> {
  const now = t.clock.now();
  await t.db
    .insertInto('sso_domains')
    .values({ id: newId('ssoDomain'), organization_id: organizationId, domain, status: 'verified', challenge_value: 'x', created_at: now, verified_at: now })
    .execute();
}

/** An enterprise organization with a verified domain and an OIDC connection created through the API. */
export async function ssoOrganization(t: TestApp, idp: OidcIdp, connection: Record<string, unknown> = {}): Promise<SsoOrg> {
  const owner = await createOrganization(t, 'SSO Org');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const domain = uniqueDomain();
  await verifyDomain(t, owner.organizationId, domain);
  const res = await t.http
    .post('/v1/sso/connections')
    .set(...bearer(owner.token))
    .send({
      type: 'oidc',
      name: 'Test IdP',
      issuer: idp.issuer,
      clientId: IDP_CLIENT.clientId,
      clientSecret: IDP_CLIENT.clientSecret,
      scopes: ['openid', 'email', 'profile', 'groups'],
      ...connection,
    });
  if (res.status !== 201) throw new Error(`create connection failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { owner, domain, connectionId: res.body.item.id };
}

/** Adds an account to the provider under a fresh subject; returns the subject. */
export function idpAccount(idp: OidcIdp, account: IdpAccount): string {
  const sub = `sub-${randomBytes(5).toString('hex')}`;
  idp.accounts[sub] = account;
  return sub;
}

/**
 * POST /v1/auth/sso/start (expects 200) and the provider's login of `sub`: the callback URL it
 * sends the browser to, and the `verifier` the starting client keeps for the exchange.
 */
export async function signInAt(t: TestApp, idp: OidcIdp, start: Record<string, unknown>, sub: string): Promise<{ back: URL; verifier: string }> {
  const res = await t.http.post('/v1/auth/sso/start').send(start);
  if (res.status !== 200) throw new Error(`start failed: ${res.status} ${JSON.stringify(res.body)}`);
  const back = await idp.login(res.body.authorizeUrl, sub);
  if (back.origin + back.pathname !== OIDC_REDIRECT_URI) throw new Error(`the provider sent the browser to ${back.href}`);
  return { back, verifier: res.body.verifier as string };
}

/** The callback URL only, for sign-ins without `returnTo` (no exchange, so no verifier needed). */
export async function loginAt(t: TestApp, idp: OidcIdp, start: Record<string, unknown>, sub: string): Promise<URL> {
  return (await signInAt(t, idp, start, sub)).back;
}

/** POST /v1/auth/sso/exchange: the code handed to `returnTo`, with its start's verifier. */
export function exchange(t: TestApp, code: string, verifier: string) {
  return t.http.post('/v1/auth/sso/exchange').send({ code, verifier });
}

/** The callback request the browser makes (path and query of `back`, against the app). */
export function callback(t: TestApp, back: URL, edit: (q: URLSearchParams) => void = () => undefined) {
  const query = new URLSearchParams(back.search);
  edit(query);
  return t.http.get(`/v1/auth/sso/oidc/callback?${query.toString()}`);
}

/** Rows a refused sign-in must not have written. */
export async function counts(t: TestApp) {
  const count = async (table: 'users' | 'members' | 'sso_identities' | 'sessions' | 'sso_exchange_codes' | 'audit_logs') =>
    Number((await t.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  return {
    users: await count('users'),
    members: await count('members'),
    identities: await count('sso_identities'),
    sessions: await count('sessions'),
    codes: await count('sso_exchange_codes'),
    audit: await count('audit_logs'),
  };
}
