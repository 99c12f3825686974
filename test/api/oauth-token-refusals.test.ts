import { createPrivateKey, generateKeyPairSync, sign as cryptoSign, type JsonWebKey } from 'node:crypto';
import * as oauth from 'openid-client';
import { SignJWT, decodeJwt } from 'jose';
import { SecretBox } from '../../src/lib/crypto';
import { signingKeys } from '../../src/oauth/keys';
import type { ManualClock } from '../support/clock';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { discover, serviceAccountClient, startOAuthApp, type OAuthTestApp, type ServiceAccountClient } from '../support/oauth';

/**
 * Every way an access token stops working at /v1, each on the next request (docs/oauth.md#access-tokens-at-the-api):
 * 401 with the body of any unauthenticated request and `WWW-Authenticate: Bearer
 * error="invalid_token", resource_metadata=…` (RFC 6750, RFC 9728). Introspection (RFC 7662) and
 * revocation (RFC 7009) through openid-client.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
});
afterAll(() => t.close());

async function tokenFor(client: ServiceAccountClient, scope?: string): Promise<string> {
  const tokens = await oauth.clientCredentialsGrant(await discover(t, client.id, client.clientSecret), scope ? { scope } : undefined);
  return tokens.access_token;
}

/** Both token checks: the plain one (GET /v1/teams) and the one that reads GET /v1/org's answer in its statement. */
const PATHS = ['/v1/teams', '/v1/org'];

async function expectRefused(token: string) {
  for (const path of PATHS) {
    const res = await t.http.get(path).set(...bearer(token));
    expect([path, res.status]).toEqual([path, 401]);
    expect(res.body).toMatchObject({ error: 'unauthorized' });
    expect(res.headers['www-authenticate']).toBe(`Bearer error="invalid_token", resource_metadata="${t.base}/.well-known/oauth-protected-resource/v1"`);
  }
}

async function expectAccepted(token: string) {
  for (const path of PATHS) {
    const res = await t.http.get(path).set(...bearer(token));
    expect([path, res.status]).toEqual([path, 200]);
  }
}

describe('401 on the next request', () => {
  it('after the service account is disabled, and back after it is enabled', async () => {
    const sa = await serviceAccountClient(t, owner);
    const token = await tokenFor(sa);
    await expectAccepted(token);
    expect((await t.http.patch(`/v1/service-accounts/${sa.id}`).set(...bearer(owner.token)).send({ disabled: true })).status).toBe(200);
    await expectRefused(token);
    // And no new token while disabled.
    await expect(tokenFor(sa)).rejects.toBeDefined();
    expect((await t.http.patch(`/v1/service-accounts/${sa.id}`).set(...bearer(owner.token)).send({ disabled: false })).status).toBe(200);
    await expectAccepted(token);
  });

  it('after the service account is deleted', async () => {
    const sa = await serviceAccountClient(t, owner);
    const token = await tokenFor(sa);
    await expectAccepted(token);
    expect((await t.http.delete(`/v1/service-accounts/${sa.id}`).set(...bearer(owner.token))).status).toBe(204);
    await expectRefused(token);
  });

  it('after revocation (RFC 7009), which only the token\'s own client can do', async () => {
    const sa = await serviceAccountClient(t, owner);
    const other = await serviceAccountClient(t, owner);
    const token = await tokenFor(sa);
    // Another client's revocation answers 200 and changes nothing.
    await oauth.tokenRevocation(await discover(t, other.id, other.clientSecret), token);
    await expectAccepted(token);
    await oauth.tokenRevocation(await discover(t, sa.id, sa.clientSecret), token);
    await expectRefused(token);
    const introspected = await oauth.tokenIntrospection(await discover(t, sa.id, sa.clientSecret), token);
    expect(introspected.active).toBe(false);
  });

  it('at expiry (ACCESS_TOKEN_TTL), not before', async () => {
    const sa = await serviceAccountClient(t, owner);
    const token = await tokenFor(sa);
    const { exp } = decodeJwt(token);
    const clock = t.clock as ManualClock;
    const start = clock.now();
    clock.set(new Date(exp! * 1000 - 2000));
    await expectAccepted(token);
    clock.set(new Date(exp! * 1000 + 1000));
    await expectRefused(token);
    clock.set(start);
  });

  it('when signed by a key the service does not publish, or for another audience, or not an access token', async () => {
    const sa = await serviceAccountClient(t, owner);
    const real = decodeJwt(await tokenFor(sa));
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT({ ...real }).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'not-ours' }).sign(privateKey);
    await expectRefused(forged);
    const jwks = (await t.http.get('/oauth/jwks')).body.keys as { kid: string }[];
    const kidOfOurs = await new SignJWT({ ...real }).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwks[0]!.kid }).sign(privateKey);
    await expectRefused(kidOfOurs);
    await expectRefused('eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.e30');
  });

  it('signed with our own key, refused for any defect of its header or claims, each alone', async () => {
    const sa = await serviceAccountClient(t, owner);
    const real = decodeJwt(await tokenFor(sa));
    const jwk = (await signingKeys(t.db, new SecretBox(t.settings.secretKey!), t.clock.now())).jwks[0]!;
    // Signed by hand (a JWT library refuses to write some of these defects), RS256 as RFC 7518 §3.3 has it.
    const key = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const sign = async (claims: Record<string, unknown>, header: Record<string, unknown> = {}) => {
      const input = `${part({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid, ...header })}.${part(claims)}`;
      return `${input}.${cryptoSign('sha256', Buffer.from(input), key).toString('base64url')}`;
    };
    const now = Math.floor(t.clock.now().getTime() / 1000);
    // The same claims re-signed are accepted, and an `aud` array holding ours too (RFC 7519 §4.1.3).
    await expectAccepted(await sign({ ...real }));
    await expectAccepted(await sign({ ...real, aud: ['https://elsewhere.example', `${t.base}/v1`] }));
    await expectRefused(await sign({ ...real }, { typ: 'JWT' }));
    await expectRefused(await sign({ ...real }, { crit: ['exp'] }));
    await expectRefused(await sign({ ...real, aud: ['https://elsewhere.example'] }));
    await expectRefused(await sign({ ...real, iss: 'https://elsewhere.example' }));
    await expectRefused(await sign({ ...real, nbf: now + 600 }));
    await expectRefused(await sign({ ...real, exp: String(now + 600) }));
    await expectRefused(await sign({ ...real, exp: now }));
    await expectRefused(await sign({ ...real, iat: undefined }));
    await expectRefused(await sign({ ...real, jti: undefined }));
    // A valid signature over other bytes: the payload swapped under a real header and signature.
    const [head, , signature] = (await sign({ ...real })).split('.');
    await expectRefused(`${head}.${Buffer.from(JSON.stringify({ ...real, scope: 'org.delete' })).toString('base64url')}.${signature}`);
  });

  it('introspection: active with the claims for its own confidential client, inactive for another client', async () => {
    const sa = await serviceAccountClient(t, owner);
    const other = await serviceAccountClient(t, owner);
    const token = await tokenFor(sa, 'teams.read');
    const mine = await oauth.tokenIntrospection(await discover(t, sa.id, sa.clientSecret), token);
    expect(mine).toMatchObject({ active: true, sub: sa.memberId, client_id: sa.id, scope: 'teams.read', iss: t.base, aud: `${t.base}/v1`, org_id: owner.organizationId, token_type: 'Bearer' });
    const theirs = await oauth.tokenIntrospection(await discover(t, other.id, other.clientSecret), token);
    expect(theirs).toEqual({ active: false });
  });

  it("follows the role: a permission taken from the account's role narrows the token from the next request", async () => {
    const role = await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: 'deployer', name: 'Deployer', permissions: ['teams.read', 'teams.manage'] });
    expect(role.status).toBe(201);
    const sa = await serviceAccountClient(t, owner, 'deployer');
    const token = await tokenFor(sa, 'teams.manage teams.read');
    expect((await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'By token' })).status).toBe(201);
    expect((await t.http.patch(`/v1/roles/${role.body.item.id}`).set(...bearer(owner.token)).send({ permissions: ['teams.read'] })).status).toBe(200);
    const refused = await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'Again' });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('teams.manage');
    await expectAccepted(token);
  });
});

describe('tenant isolation', () => {
  it("a token of organization A reaches nothing of organization B's", async () => {
    const other = await createOrganization(t, 'Other');
    const team = await t.http.post('/v1/teams').set(...bearer(other.token)).send({ name: 'Secret team' });
    const sa = await serviceAccountClient(t, owner);
    const token = await tokenFor(sa);
    expect((await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(token))).status).toBe(404);
    const list = await t.http.get('/v1/teams').set(...bearer(token));
    expect(list.body.items.map((x: { id: string }) => x.id)).not.toContain(team.body.item.id);
  });
});
