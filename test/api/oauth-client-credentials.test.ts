import * as oauth from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { discover, serviceAccountClient, startOAuthApp, type OAuthTestApp, type ServiceAccountClient } from '../support/oauth';

/**
 * A service account's client_credentials token end to end (docs/oauth.md): discovered and asked for
 * by openid-client (an independent, certified client), verified against the published JWKS with
 * jose, and used on /v1 as the service account.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
let sa: ServiceAccountClient;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
  sa = await serviceAccountClient(t, owner, 'member');
});
afterAll(() => t.close());

describe('metadata', () => {
  it('publishes RFC 8414 metadata and the same document as OpenID discovery, issuer PUBLIC_BASE_URL', async () => {
    const as = await t.http.get('/.well-known/oauth-authorization-server');
    expect(as.status).toBe(200);
    expect(as.body).toMatchObject({
      issuer: t.base,
      token_endpoint: `${t.base}/oauth/token`,
      jwks_uri: `${t.base}/oauth/jwks`,
      introspection_endpoint: `${t.base}/oauth/token/introspection`,
      revocation_endpoint: `${t.base}/oauth/token/revocation`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(as.body.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials', 'authorization_code', 'refresh_token']));
    expect(as.body.grant_types_supported).not.toContain('implicit');
    expect(as.body.scopes_supported).toEqual(expect.arrayContaining(['members.read', 'teams.manage', 'offline_access']));
    const oidc = await t.http.get('/.well-known/openid-configuration');
    expect(oidc.status).toBe(200);
    expect(oidc.body).toEqual(as.body);
  });

  it('names the issuer, not the Host the request carried', async () => {
    const res = await t.http.get('/.well-known/oauth-authorization-server').set('host', 'evil.example');
    expect(res.body.issuer).toBe(t.base);
    expect(res.body.token_endpoint).toBe(`${t.base}/oauth/token`);
  });

  it('describes the API as a protected resource (RFC 9728)', async () => {
    const res = await t.http.get('/.well-known/oauth-protected-resource/v1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ resource: `${t.base}/v1`, authorization_servers: [t.base], scopes_supported: expect.arrayContaining(['members.read']), bearer_methods_supported: ['header'] });
  });
});

describe('client_credentials for a service account', () => {
  it('issues an RFC 9068 JWT that verifies against the published JWKS and works on /v1 as the account', async () => {
    const config = await discover(t, sa.id, sa.clientSecret);
    const tokens = await oauth.clientCredentialsGrant(config, { scope: 'members.read teams.read' });
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(600);
    expect(tokens.scope).toBe('members.read teams.read');
    expect(tokens.refresh_token).toBeUndefined();
    const jwks = createRemoteJWKSet(new URL(config.serverMetadata().jwks_uri!));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, { issuer: t.base, audience: `${t.base}/v1`, typ: 'at+jwt' });
    expect(protectedHeader.alg).toBe('RS256');
    expect(payload).toEqual({
      iss: t.base,
      sub: sa.memberId,
      aud: `${t.base}/v1`,
      exp: expect.any(Number),
      iat: expect.any(Number),
      jti: expect.any(String),
      client_id: sa.id,
      scope: 'members.read teams.read',
      org_id: owner.organizationId,
    });
    expect(payload.exp! - payload.iat!).toBe(600);

    const members = await t.http.get('/v1/members').set(...bearer(tokens.access_token));
    expect(members.status).toBe(200);
    expect(members.body.items.map((m: { id: string }) => m.id)).toContain(owner.memberId);
    // A change made with it is the service account's.
    const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Platform' });
    expect(team.status).toBe(201);
    const teams = await t.http.get('/v1/teams').set(...bearer(tokens.access_token));
    expect(teams.status).toBe(200);
    expect(teams.body.items.map((x: { id: string }) => x.id)).toContain(team.body.item.id);
  });

  it('grants the account role\'s permissions when no scope is asked, and refuses a scope the role lacks', async () => {
    const config = await discover(t, sa.id, sa.clientSecret);
    const tokens = await oauth.clientCredentialsGrant(config);
    const scope = tokens.scope!.split(' ');
    expect(scope).toEqual(expect.arrayContaining(['members.read', 'teams.read']));
    expect(scope).not.toContain('teams.manage');
    await expect(oauth.clientCredentialsGrant(config, { scope: 'members.read teams.manage' })).rejects.toMatchObject({ error: 'invalid_scope' });
  });

  it('refuses a wrong secret and an unknown client with invalid_client (RFC 6749 §5.2)', async () => {
    for (const [id, secret] of [
      [sa.id, 'cpc_wrong'],
      ['svc_01jz0000000000000000000000', sa.clientSecret],
    ]) {
      const res = await t.http.post('/oauth/token').auth(id!, secret!).type('form').send({ grant_type: 'client_credentials' });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
      expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    }
  });

  it('narrows a token to its scope on each request (403 naming the permission)', async () => {
    const tokens = await oauth.clientCredentialsGrant(await discover(t, sa.id, sa.clientSecret), { scope: 'teams.read' });
    const res = await t.http.get('/v1/members').set(...bearer(tokens.access_token));
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('members.read');
  });

  it('never reaches the account or session-only routes (401)', async () => {
    const tokens = await oauth.clientCredentialsGrant(await discover(t, sa.id, sa.clientSecret));
    expect((await t.http.get('/v1/me').set(...bearer(tokens.access_token))).status).toBe(401);
    expect((await t.http.post('/v1/service-accounts').set(...bearer(tokens.access_token)).send({ name: 'x', role: 'member' })).status).toBe(401);
  });

  it('signs with a kid the JWKS lists', async () => {
    const tokens = await oauth.clientCredentialsGrant(await discover(t, sa.id, sa.clientSecret));
    const jwks = await t.http.get('/oauth/jwks');
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(decodeProtectedHeader(tokens.access_token).kid);
    for (const key of jwks.body.keys) expect(key.d).toBeUndefined();
  });
});
