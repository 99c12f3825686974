import * as oauth from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { randomUUID } from 'node:crypto';
import { SecretBox, sha256Hex } from '../../src/lib/crypto';
import { newId } from '../../src/lib/ids';
import { keyOf } from '../../src/oauth/records';
import { insert as insertAuthorization } from '../../src/authorizations/store';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { organizationClientToken, serviceAccountClient, startOAuthApp, type OAuthTestApp } from '../support/oauth';

/**
 * An organization's own OAuth clients (docs/oauth.md#organization-clients): the routes, the
 * authorization server finding them when they authenticate (openid-client at its endpoints), and
 * their tokens at /v1 ending with them.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
});
afterAll(() => t.close());

const CONFIDENTIAL = { name: 'Release dashboard', type: 'confidential', redirectUris: ['https://dashboard.example.com/cb', 'http://127.0.0.1/cb'], scopes: ['teams.read', 'teams.manage', 'offline_access'] };

async function register(token: string, body: Record<string, unknown> = CONFIDENTIAL) {
  const res = await t.http.post('/v1/oauth-clients').set(...bearer(token)).send(body);
  expect(res.status).toBe(201);
  return res.body as { item: { id: string; type: string; scopes: string[] }; clientSecret?: string };
}

/** openid-client's configuration for an organization client, discovered through RFC 8414 metadata. */
function discoverAs(clientId: string, auth: oauth.ClientAuth) {
  return oauth.discovery(new URL(t.base), clientId, undefined, auth, { algorithm: 'oauth2', execute: [oauth.allowInsecureRequests] });
}

/** The OAuth error code an endpoint answered: in the body (RFC 6749 §5.2), or, for a 401, in its WWW-Authenticate challenge. */
async function oauthError(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) return err.error_description ? `${err.error}: ${err.error_description}` : err.error;
    if (err instanceof oauth.WWWAuthenticateChallengeError) return err.cause[0]?.parameters.error;
    throw err;
  }
  return undefined;
}

async function expectRefused(token: string) {
  const res = await t.http.get('/v1/teams').set(...bearer(token));
  expect(res.status).toBe(401);
  expect(res.body).toMatchObject({ error: 'unauthorized' });
  expect(res.headers['www-authenticate']).toBe(`Bearer error="invalid_token", resource_metadata="${t.base}/.well-known/oauth-protected-resource/v1"`);
}

describe('the routes', () => {
  it('registers a confidential client: its secret shown once and stored only as a hash; get and list never show it', async () => {
    const created = await register(owner.token);
    expect(created.item).toEqual({
      id: expect.stringMatching(/^oac_/),
      name: 'Release dashboard',
      type: 'confidential',
      redirectUris: CONFIDENTIAL.redirectUris,
      scopes: CONFIDENTIAL.scopes,
      logoUrl: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      createdBy: { memberId: owner.memberId },
    });
    expect(created.clientSecret).toMatch(/^cpo_[A-Za-z0-9_-]{43}$/);
    const row = await t.db.selectFrom('oauth_clients').select(['secret_hash']).where('id', '=', created.item.id).executeTakeFirstOrThrow();
    expect(row.secret_hash).toBe(sha256Hex(created.clientSecret!));

    const got = await t.http.get(`/v1/oauth-clients/${created.item.id}`).set(...bearer(owner.token));
    expect(got.status).toBe(200);
    expect(got.body.item).toEqual(created.item);
    const list = await t.http.get('/v1/oauth-clients').set(...bearer(owner.token));
    expect(list.status).toBe(200);
    expect(list.body.items.map((c: { id: string }) => c.id)).toContain(created.item.id);
    for (const body of [got.text, list.text]) expect(body).not.toContain(created.clientSecret);

    const entry = await t.db.selectFrom('audit_logs').select(['action', 'changes']).where('target_id', '=', created.item.id).executeTakeFirstOrThrow();
    expect(entry.action).toBe('oauth_client.created');
    expect(JSON.stringify(entry.changes)).not.toContain(created.clientSecret);
    expect(t.logs.join('')).not.toContain(created.clientSecret);
  });

  it('registers a public client without a secret', async () => {
    const created = await register(owner.token, { name: 'CLI', type: 'public', redirectUris: ['http://localhost/callback'], scopes: ['teams.read'], logoUrl: 'https://cdn.example.com/cli.png' });
    expect(created.item).toMatchObject({ type: 'public', logoUrl: 'https://cdn.example.com/cli.png' });
    expect(created.clientSecret).toBeUndefined();
  });

  it('pages the list newest first', async () => {
    const other = await createOrganization(t, 'Pages');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await register(other.token)).item.id);
    const first = await t.http.get('/v1/oauth-clients?limit=2').set(...bearer(other.token));
    expect(first.body.items.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[1]]);
    const second = await t.http.get(`/v1/oauth-clients?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`).set(...bearer(other.token));
    expect(second.body).toEqual({ items: [expect.objectContaining({ id: ids[0] })], nextCursor: null });
  });

  it('updates name, redirect URIs, scopes and logo; not the type; audited', async () => {
    const { item } = await register(owner.token);
    const res = await t.http
      .patch(`/v1/oauth-clients/${item.id}`)
      .set(...bearer(owner.token))
      .send({ name: 'Renamed', redirectUris: ['https://new.example.com/cb'], scopes: ['teams.read'], logoUrl: null });
    expect(res.status).toBe(200);
    expect(res.body.item).toMatchObject({ name: 'Renamed', type: 'confidential', redirectUris: ['https://new.example.com/cb'], scopes: ['teams.read'], logoUrl: null });
    const typeChange = await t.http.patch(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token)).send({ type: 'public' });
    expect(typeChange.status).toBe(400);
    const actions = await t.db.selectFrom('audit_logs').select('action').where('target_id', '=', item.id).orderBy('seq').execute();
    expect(actions.map((a) => a.action)).toEqual(['oauth_client.created', 'oauth_client.updated']);
  });

  it('deletes: 204, then 404 oauth_client_not_found', async () => {
    const { item } = await register(owner.token);
    expect((await t.http.delete(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token))).status).toBe(204);
    const again = await t.http.delete(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token));
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('oauth_client_not_found');
    expect((await t.http.get(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token))).status).toBe(404);
  });

  it.each([
    [{ ...CONFIDENTIAL, redirectUris: ['http://dashboard.example.com/cb'] }, ['body', 'redirectUris', '0']],
    [{ ...CONFIDENTIAL, redirectUris: ['https://dashboard.example.com/cb#frag'] }, ['body', 'redirectUris', '0']],
    [{ ...CONFIDENTIAL, redirectUris: ['https://ok.example.com/cb', 'https://user:pw@evil.example.com/cb'] }, ['body', 'redirectUris', '1']],
    [{ ...CONFIDENTIAL, redirectUris: ['https://[bad/cb'] }, ['body', 'redirectUris', '0']],
    [{ ...CONFIDENTIAL, redirectUris: [] }, ['body', 'redirectUris']],
    [{ ...CONFIDENTIAL, scopes: ['teams.read', 'nothing.here'] }, ['body', 'scopes', '1']],
    [{ ...CONFIDENTIAL, scopes: ['openid'] }, ['body', 'scopes', '0']],
    [{ ...CONFIDENTIAL, type: 'hybrid' }, ['body', 'type']],
    [{ ...CONFIDENTIAL, logoUrl: 'http://cdn.example.com/x.png' }, ['body', 'logoUrl']],
    [{ ...CONFIDENTIAL, clientSecret: 'mine' }, ['body', 'clientSecret']],
  ])('refuses bad input with 400 naming the field: %j', async (body, path) => {
    const res = await t.http.post('/v1/oauth-clients').set(...bearer(owner.token)).send(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
  });

  it('needs oauthClients.manage (a member gets 403) and a session (an API key gets 401)', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const refused = await t.http.post('/v1/oauth-clients').set(...bearer(member.token)).send(CONFIDENTIAL);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('oauthClients.manage');
    expect((await t.http.get('/v1/oauth-clients').set(...bearer(member.token))).status).toBe(403);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' });
    expect(key.status).toBe(201);
    expect((await t.http.get('/v1/oauth-clients').set('x-api-key', key.body.key)).status).toBe(401);
    const admin = await addMember(t, owner.organizationId, 'admin');
    expect((await t.http.post('/v1/oauth-clients').set(...bearer(admin.token)).send(CONFIDENTIAL)).status).toBe(201);
  });
});

describe('tenant isolation', () => {
  it("another organization's admin cannot see, change or delete the client (404), nor list it", async () => {
    const { item } = await register(owner.token);
    const other = await createOrganization(t, 'Other');
    const otherAdmin = await addMember(t, other.organizationId, 'admin');
    for (const token of [other.token, otherAdmin.token]) {
      const get = await t.http.get(`/v1/oauth-clients/${item.id}`).set(...bearer(token));
      expect(get.status).toBe(404);
      expect(get.body.error).toBe('oauth_client_not_found');
      expect((await t.http.patch(`/v1/oauth-clients/${item.id}`).set(...bearer(token)).send({ name: 'Mine now' })).status).toBe(404);
      expect((await t.http.delete(`/v1/oauth-clients/${item.id}`).set(...bearer(token))).status).toBe(404);
      const list = await t.http.get('/v1/oauth-clients').set(...bearer(token));
      expect(list.body.items.map((c: { id: string }) => c.id)).not.toContain(item.id);
    }
    const still = await t.http.get(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token));
    expect(still.body.item.name).toBe('Release dashboard');
  });

  it("a token naming the client for another organization's member is refused", async () => {
    const { item } = await register(owner.token);
    const other = await createOrganization(t, 'Elsewhere');
    const token = await organizationClientToken(t, { clientId: item.id, memberId: other.memberId, organizationId: other.organizationId, scope: 'teams.read' });
    await expectRefused(token);
  });
});

describe('at the authorization server', () => {
  it('authenticates a confidential client with its secret (introspection of its own token) and refuses a wrong one', async () => {
    const { item, clientSecret } = await register(owner.token);
    const token = await organizationClientToken(t, { clientId: item.id, memberId: owner.memberId, organizationId: owner.organizationId, scope: 'teams.read' });
    const config = await discoverAs(item.id, oauth.ClientSecretBasic(clientSecret!));
    const introspected = await oauth.tokenIntrospection(config, token);
    expect(introspected).toMatchObject({ active: true, client_id: item.id, sub: owner.memberId, org_id: owner.organizationId, scope: 'teams.read' });
    const wrong = await discoverAs(item.id, oauth.ClientSecretBasic(`${clientSecret!.slice(0, -1)}x`));
    expect(await oauthError(oauth.tokenIntrospection(wrong, token))).toMatch(/^invalid_client/);
    // Another client's secret does not authenticate this one.
    const other = await register(owner.token);
    expect(await oauthError(oauth.tokenIntrospection(await discoverAs(item.id, oauth.ClientSecretPost(other.clientSecret!)), token))).toMatch(/^invalid_client/);
  });

  it('an organization client gets no client_credentials token (it acts only for members who authorize it)', async () => {
    const { item, clientSecret } = await register(owner.token);
    // oidc-provider's answer for a grant type the client is not registered for.
    expect(await oauthError(oauth.clientCredentialsGrant(await discoverAs(item.id, oauth.ClientSecretBasic(clientSecret!))))).toBe('invalid_request: requested grant type is not allowed for this client');
  });

  it('a public client revokes its own token by client_id alone, and cannot introspect', async () => {
    const { item } = await register(owner.token, { name: 'CLI', type: 'public', redirectUris: ['http://127.0.0.1/cb'], scopes: ['teams.read'] });
    const token = await organizationClientToken(t, { clientId: item.id, memberId: owner.memberId, organizationId: owner.organizationId, scope: 'teams.read' });
    expect((await t.http.get('/v1/teams').set(...bearer(token))).status).toBe(200);
    const config = await discoverAs(item.id, oauth.None());
    // Introspection is for confidential clients (RFC 7662 §2.1 lets the server refuse others).
    expect(await oauth.tokenIntrospection(config, token)).toEqual({ active: false });
    await oauth.tokenRevocation(config, token);
    await expectRefused(token);
  });
});

describe('its tokens at /v1', () => {
  it('do what scope ∩ the member ∩ the client allow; narrowing the client narrows them from the next request', async () => {
    const { item } = await register(owner.token);
    const token = await organizationClientToken(t, { clientId: item.id, memberId: owner.memberId, organizationId: owner.organizationId, scope: 'teams.read teams.manage' });
    const jwks = createRemoteJWKSet(new URL(`${t.base}/oauth/jwks`));
    await jwtVerify(token, jwks, { issuer: t.base, audience: `${t.base}/v1`, typ: 'at+jwt' });
    expect((await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'By client' })).status).toBe(201);
    expect((await t.http.patch(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token)).send({ scopes: ['teams.read'] })).status).toBe(200);
    const refused = await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'Again' });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('teams.manage');
    expect((await t.http.get('/v1/teams').set(...bearer(token))).status).toBe(200);
  });

  it("answer 401 with WWW-Authenticate on the next request once the client is deleted, and the client no longer authenticates", async () => {
    const { item, clientSecret } = await register(owner.token);
    const token = await organizationClientToken(t, { clientId: item.id, memberId: owner.memberId, organizationId: owner.organizationId, scope: 'teams.read' });
    expect((await t.http.get('/v1/teams').set(...bearer(token))).status).toBe(200);
    const config = await discoverAs(item.id, oauth.ClientSecretBasic(clientSecret!));
    expect((await oauth.tokenIntrospection(config, token)).active).toBe(true);
    expect((await t.http.delete(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token))).status).toBe(204);
    await expectRefused(token);
    expect(await oauthError(oauth.tokenIntrospection(config, token))).toMatch(/^invalid_client/);
  });

  it("revokes the members' authorizations of the client with it, and their grants' records", async () => {
    const { item } = await register(owner.token);
    const grantKey = keyOf('Grant', randomUUID());
    const now = t.clock.now();
    const authorization = await insertAuthorization(
      t.db,
      { id: newId('oauthAuthorization'), organizationId: owner.organizationId, memberId: owner.memberId, clientId: item.id, clientType: 'organization', clientName: 'Release dashboard', scopes: ['teams.read'], resource: `${t.base}/v1`, grantKey, expiresAt: new Date(now.getTime() + 86_400_000) },
      now,
    );
    // A refresh token of the grant, as the authorization server stores it.
    await t.db.insertInto('oauth_records').values({ id: keyOf('RefreshToken', randomUUID()), model: 'RefreshToken', payload_sealed: new SecretBox(t.settings.secretKey!).encrypt('{}'), grant_key: grantKey }).execute();
    const listed = async () => ((await t.http.get('/v1/me/authorizations').set(...bearer(owner.token))).body.items as { id: string }[]).map((a) => a.id);
    expect(await listed()).toContain(authorization.id);
    expect((await t.http.delete(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect(await listed()).not.toContain(authorization.id);
    expect(await t.db.selectFrom('oauth_records').select('id').where('grant_key', '=', grantKey).execute()).toEqual([]);
    const entry = await t.db.selectFrom('audit_logs').select('changes').where('target_id', '=', item.id).where('action', '=', 'oauth_client.deleted').executeTakeFirstOrThrow();
    expect(entry.changes).toMatchObject({ authorizationsRevoked: { from: 1, to: null } });
  });

  it("a service account's token is untouched by deleting an organization client", async () => {
    const sa = await serviceAccountClient(t, owner);
    const { item } = await register(owner.token);
    const config = await discoverAs(sa.id, oauth.ClientSecretBasic(sa.clientSecret));
    const tokens = await oauth.clientCredentialsGrant(config, { scope: 'teams.read' });
    expect((await t.http.delete(`/v1/oauth-clients/${item.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/teams').set(...bearer(tokens.access_token))).status).toBe(200);
  });
});
