import * as oauth from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { discover, serviceAccountClient, startOAuthApp, type OAuthTestApp, type ServiceAccountClient } from '../support/oauth';

/**
 * Signing keys (docs/oauth.md#signing-keys): made on first use and stored sealed, rotated by a
 * platform admin without breaking live tokens, seen by another process on the same database.
 */
let t: OAuthTestApp;
let replica: TestApp;
let owner: OrgOwner;
let sa: ServiceAccountClient;
beforeAll(async () => {
  t = await startOAuthApp();
  replica = await createTestApp({ database: t.database, clock: t.clock, settings: { publicBaseUrl: t.base } });
  owner = await createOrganization(t);
  sa = await serviceAccountClient(t, owner);
});
afterAll(async () => {
  await replica.close();
  await t.close();
});

const token = async () => (await oauth.clientCredentialsGrant(await discover(t, sa.id, sa.clientSecret))).access_token;

it('stores the private key sealed, never in clear', async () => {
  await token();
  const rows = await t.db.selectFrom('oauth_signing_keys').select(['kid', 'private_jwk_sealed', 'public_jwk']).execute();
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) {
    expect(row.private_jwk_sealed.startsWith('v1.')).toBe(true);
    expect(row.private_jwk_sealed).not.toContain('"d"');
    expect(row.public_jwk).not.toHaveProperty('d');
  }
});

it('rotates: live tokens keep working and verifying, new ones are signed by the new key, on every replica', async () => {
  const before = await token();
  const oldKid = decodeProtectedHeader(before).kid;

  expect((await t.http.post('/v1/admin/oauth/rotate-keys').set(...bearer(owner.token))).status).toBe(403);
  await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', owner.userId).execute();
  expect((await t.http.post('/v1/admin/oauth/rotate-keys')).status).toBe(401);
  const rotated = await t.http.post('/v1/admin/oauth/rotate-keys').set(...bearer(owner.token));
  expect(rotated.status).toBe(200);
  expect(rotated.body.item.retiredKeyIds).toEqual([oldKid]);
  const newKid = rotated.body.item.signingKeyId;
  expect(newKid).not.toBe(oldKid);

  const after = await token();
  expect(decodeProtectedHeader(after).kid).toBe(newKid);
  const jwks = await t.http.get('/oauth/jwks');
  expect(jwks.body.keys.map((k: { kid: string }) => k.kid).sort()).toEqual([oldKid, newKid].sort());
  const remote = createRemoteJWKSet(new URL(`${t.base}/oauth/jwks`));
  for (const value of [before, after]) {
    await expect(jwtVerify(value, remote, { issuer: t.base, audience: `${t.base}/v1` })).resolves.toBeDefined();
    expect((await t.http.get('/v1/teams').set(...bearer(value))).status).toBe(200);
    // Another process on the same database, which never saw the rotation, accepts both.
    expect((await replica.http.get('/v1/teams').set(...bearer(value))).status).toBe(200);
  }
});
