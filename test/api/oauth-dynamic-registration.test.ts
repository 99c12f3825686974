import * as oauth from 'openid-client';
import pino from 'pino';
import { createJobRunner } from '../../src/jobs';
import { SecretBox } from '../../src/lib/crypto';
import { createOutbound } from '../../src/outbound';
import { ManualClock } from '../support/clock';
import { startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { authorizeAsPerson, pageText } from '../support/oauth-person';
import { bearer, createOrganization } from '../support/factories';

/**
 * Dynamic client registration (RFC 7591, docs/oauth.md#dynamic-registration) with an independent
 * client (openid-client): registration at the metadata's registration_endpoint, then the whole
 * authorization code + PKCE flow of the registered public client through the hosted pages, and
 * the refusals: registration off (the default), a registrant claiming one of our fields, a client
 * unused for 30 days (and the job runner's upkeep removing it), too many registrations from one
 * address.
 */
const REDIRECT = 'http://127.0.0.1:9/callback';
const clock = new ManualClock(new Date());
let t: OAuthTestApp;
let off: OAuthTestApp;

beforeAll(async () => {
  t = await startOAuthApp({ clock, env: { OAUTH_DCR: 'open' } });
  off = await startOAuthApp({ database: t.database });
});
afterAll(async () => {
  await off?.close();
  await t?.close();
});

const options = { algorithm: 'oauth2' as const, execute: [oauth.allowInsecureRequests] };

async function register(metadata: Partial<oauth.ClientMetadata>): Promise<oauth.Configuration> {
  return oauth.dynamicClientRegistration(new URL(t.base), { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', ...metadata }, oauth.None(), options);
}

async function authorize(config: oauth.Configuration, email: string, scope: string) {
  const verifier = oauth.randomPKCECodeVerifier();
  const state = oauth.randomState();
  const url = oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope, state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource: `${t.base}/v1` });
  const answer = await authorizeAsPerson(t.base, url.href, { email });
  return { ...answer, verifier, state };
}

describe('dynamic client registration (OAUTH_DCR=open)', () => {
  it('the metadata names the registration endpoint; a registered public client completes authorization code + PKCE and its token calls the API', async () => {
    const metadata = (await t.http.get('/.well-known/oauth-authorization-server')).body;
    expect(metadata.registration_endpoint).toBe(`${t.base}/oauth/reg`);

    const config = await register({ client_name: 'Notes <agent>', grant_types: ['authorization_code', 'refresh_token'], scope: 'members.read teams.read offline_access' });
    const registered = config.clientMetadata();
    expect(registered.client_id).toMatch(/^oac_/);
    expect(registered.token_endpoint_auth_method).toBe('none');
    expect(registered.client_secret).toBeUndefined();
    expect(registered.registration_access_token).toBeUndefined();
    const stored = await t.db.selectFrom('oauth_registered_clients').selectAll().where('id', '=', registered.client_id).executeTakeFirstOrThrow();
    expect(stored.name).toBe('Notes <agent>');

    const owner = await createOrganization(t, 'Acme');
    const flow = await authorize(config, owner.email, 'members.read offline_access');
    const consent = pageText(flow.consent!);
    expect(consent).toContain('Notes <agent> wants to act for you');
    expect(consent).toContain(`registered itself (client ${registered.client_id}`);
    expect(consent).toContain('its name is its own claim');
    expect(flow.url.searchParams.get('iss')).toBe(t.base);

    const tokens = await oauth.authorizationCodeGrant(config, flow.url, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }, { resource: `${t.base}/v1` });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);
    const refreshed = await oauth.refreshTokenGrant(config, tokens.refresh_token!, { resource: `${t.base}/v1` });
    expect((await t.http.get('/v1/members').set(...bearer(refreshed.access_token))).status).toBe(200);

    // The member and the organization's admins see it as a dynamic client; the admin revokes it.
    const mine = await t.http.get('/v1/me/authorizations').set(...bearer(owner.token));
    expect(mine.body.items).toEqual([expect.objectContaining({ client: { id: registered.client_id, name: 'Notes <agent>', type: 'dynamic' }, organizationId: owner.organizationId })]);
    const listed = await t.http.get('/v1/oauth-authorizations').set(...bearer(owner.token));
    expect(listed.body.items.map((a: { client: { type: string } }) => a.client.type)).toEqual(['dynamic']);
    expect((await t.http.delete(`/v1/oauth-authorizations/${listed.body.items[0].id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/members').set(...bearer(refreshed.access_token))).status).toBe(401);
  });

  it("the organization's oauth-policy refuses dynamic clients at consent", async () => {
    const config = await register({ client_name: 'Refused bot' });
    const owner = await createOrganization(t, 'Closed Co');
    expect((await t.http.put('/v1/org/oauth-policy').set(...bearer(owner.token)).send({ thirdPartyClients: 'deny', allowList: [], maxScopes: null })).status).toBe(200);
    const verifier = oauth.randomPKCECodeVerifier();
    const url = oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'members.read', code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    await expect(authorizeAsPerson(t.base, url.href, { email: owner.email })).rejects.toThrow(/no organization to choose: .*Closed Co \(Its administrators do not allow this application\.\)/);
  });

  it('a registrant cannot make itself confidential, one of ours, or a client_credentials client', async () => {
    const res = await t.http
      .post('/oauth/reg')
      .send({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic', client_kind: 'organization', organization_id: 'org_x', member_id: 'om_x', grant_types: ['authorization_code', 'client_credentials'] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], client_kind: 'dynamic' });
    expect(res.body).not.toHaveProperty('client_secret');
    expect(res.body).not.toHaveProperty('organization_id');
    expect(res.body).not.toHaveProperty('member_id');
    const grant = await t.http.post('/oauth/token').type('form').send({ grant_type: 'client_credentials', client_id: res.body.client_id });
    expect(grant.status).toBe(400);
    expect(grant.body.error).toMatch(/unauthorized_client|invalid_request|invalid_client/);
  });

  it('bad registrations are OAuth errors, never a 500', async () => {
    const noRedirect = await t.http.post('/oauth/reg').send({ client_name: 'x' });
    expect(noRedirect.status).toBe(400);
    expect(noRedirect.body.error).toBe('invalid_redirect_uri');
    const badScope = await t.http.post('/oauth/reg').send({ redirect_uris: [REDIRECT], scope: 'everything' });
    expect(badScope.status).toBe(400);
    expect(badScope.body.error).toBe('invalid_client_metadata');
    const notJson = await t.http.post('/oauth/reg').type('form').send('redirect_uris=x');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error).toBe('invalid_request');
  });

  it('platform admins list the registered clients (GET /v1/admin/oauth-clients), newest first and paged; others get 403', async () => {
    const first = await register({ client_name: 'Listed one', redirect_uris: ['http://127.0.0.1:9/one'] });
    const second = await register({ client_name: 'Listed two' });
    const admin = await createOrganization(t, 'Platform');
    const outsider = await createOrganization(t, 'Tenant');
    await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.userId).execute();

    const page = await t.http.get('/v1/admin/oauth-clients').query({ limit: 1 }).set(...bearer(admin.token)).expect(200);
    expect(page.body.items).toEqual([
      { id: second.clientMetadata().client_id, name: 'Listed two', redirectUris: [REDIRECT], createdAt: expect.any(String), lastUsedAt: expect.any(String), expiresAt: expect.any(String) },
    ]);
    expect(Date.parse(page.body.items[0].expiresAt) - Date.parse(page.body.items[0].lastUsedAt)).toBe(30 * 86_400_000);
    const next = await t.http.get('/v1/admin/oauth-clients').query({ limit: 1, cursor: page.body.nextCursor }).set(...bearer(admin.token)).expect(200);
    expect(next.body.items.map((c: { id: string; redirectUris: string[] }) => [c.id, c.redirectUris])).toEqual([[first.clientMetadata().client_id, ['http://127.0.0.1:9/one']]]);
    // Nothing of the registration beyond the listed fields (never a secret: these clients have none).
    expect(Object.keys(next.body.items[0]).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'redirectUris']);

    const refused = await t.http.get('/v1/admin/oauth-clients').set(...bearer(outsider.token));
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toBe('platform_admin_required');
  });

  it('a client unused for 30 days is no longer known', async () => {
    const config = await register({ client_name: 'Forgotten' });
    clock.advance(31 * 86_400_000);
    const res = await t.http.get('/oauth/auth').query({ client_id: config.clientMetadata().client_id, response_type: 'code', redirect_uri: REDIRECT, scope: 'members.read', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client');

    // The job runner's upkeep (any runner, whatever kinds it takes) removes the forgotten clients and
    // the library's records past their expiry, and nothing live.
    const now = clock.now();
    const expired = () => t.db.selectFrom('oauth_records').select((eb) => eb.fn.countAll<string>().as('n')).where('expires_at', '<=', now).executeTakeFirstOrThrow();
    const live = () => t.db.selectFrom('oauth_records').select((eb) => eb.fn.countAll<string>().as('n')).where((eb) => eb.or([eb('expires_at', '>', now), eb('expires_at', 'is', null)])).executeTakeFirstOrThrow();
    expect(Number((await expired()).n)).toBeGreaterThan(0);
    const liveBefore = Number((await live()).n);
    const runner = createJobRunner({ db: t.db, clock, logger: pino({ level: 'silent' }), secrets: new SecretBox(t.settings.secretKey!), outbound: createOutbound({ allowedNetworks: [] }), settings: t.settings, kinds: { webhooks: false, mail: false } });
    expect(await runner.maintain()).toBeGreaterThan(0);
    const clients = await t.db.selectFrom('oauth_registered_clients').select('id').execute();
    expect(clients.map((c) => c.id)).not.toContain(config.clientMetadata().client_id);
    expect(Number((await expired()).n)).toBe(0);
    expect(Number((await live()).n)).toBe(liveBefore);
  });

  it('registrations are limited per address (RATE_LIMIT_CLIENT_REGISTRATION_IP): past it 429 with Retry-After, and nothing is stored', async () => {
    const limited = await startOAuthApp({ database: t.database, clock, env: { OAUTH_DCR: 'open', RATE_LIMIT_CLIENT_REGISTRATION_IP: '2/1h' } });
    try {
      // Every attempt counts, a refused one too: a caller cannot probe for free.
      expect((await limited.http.post('/oauth/reg').send({ redirect_uris: ['not a url'] })).status).toBe(400);
      const first = await oauth.dynamicClientRegistration(new URL(limited.base), { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }, oauth.None(), options);
      expect(first.clientMetadata().client_id).toMatch(/^oac_/);
      const before = await t.db.selectFrom('oauth_registered_clients').select('id').execute();
      const res = await limited.http.post('/oauth/reg').send({ redirect_uris: [REDIRECT], client_name: 'One too many' });
      expect(res.status).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/retry in \d+ s/) });
      expect(await t.db.selectFrom('oauth_registered_clients').select('id').execute()).toHaveLength(before.length);
      await expect(oauth.dynamicClientRegistration(new URL(limited.base), { redirect_uris: [REDIRECT] }, oauth.None(), options)).rejects.toThrow();
    } finally {
      await limited.close();
    }
  });
});

describe('dynamic client registration off (the default)', () => {
  it('the metadata names no registration endpoint, and a registration is refused with an OAuth error', async () => {
    const metadata = (await off.http.get('/.well-known/oauth-authorization-server')).body;
    expect(metadata.registration_endpoint).toBeUndefined();
    const res = await off.http.post('/oauth/reg').send({ redirect_uris: [REDIRECT] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'invalid_request', error_description: 'dynamic client registration is not enabled on this server' });
    await expect(oauth.dynamicClientRegistration(new URL(off.base), { redirect_uris: [REDIRECT] }, oauth.None(), options)).rejects.toThrow();
  });
});
