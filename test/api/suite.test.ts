import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { FakeOAuthServer } from '../fakes/oauth-server';
import { FakeGraphServer } from '../fakes/suite-graph';
import { findPlainText, scannedColumnCount } from '../fakes/oauth-db-scan';
import type { ManualClock } from '../support/clock';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';

const PUBLIC_BASE = 'http://cp.example.test';
const TENANT = 'contoso.example';
const CLIENT_ID = '11111111-2222-4333-8444-555555555555';
const CLIENT_SECRET = 'suite-client-secret-Zq7x9';
const CHAT = '19:meeting_abc@thread.v2';

let t: TestApp;
let identity: FakeOAuthServer;
let graph: FakeGraphServer;
const clock = () => t.clock as ManualClock;

beforeAll(async () => {
  identity = await new FakeOAuthServer({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tenantPaths: true }).start();
  graph = await new FakeGraphServer((token) => identity.validAccessTokens.has(token)).start();
  graph.chats.add(CHAT);
  t = await createTestApp({
    settings: { suiteGraphBaseUrl: graph.baseUrl, suiteLoginBaseUrl: identity.baseUrl, publicBaseUrl: PUBLIC_BASE, suiteTimeoutMs: 500 },
  });
});
afterAll(async () => {
  await t.close();
  await graph.stop();
  await identity.stop();
});
afterEach(() => {
  graph.next = [];
  identity.failRefresh = null;
  identity.failNextToken = null;
});

const clientBody = { tenantId: TENANT, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, features: ['chatSend'] };

async function orgWithClient(): Promise<OrgOwner> {
  const owner = await createOrganization(t);
  const res = await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send(clientBody);
  expect(res.status).toBe(200);
  return owner;
}

/** Start → the identity fake's authorize endpoint (consent) → the callback URL it redirects to. */
async function authorizeRedirect(token: string): Promise<string> {
  const start = await t.http.post('/v1/capabilities/suite-365/connect/start').set(...bearer(token));
  expect(start.status).toBe(200);
  const consent = await fetch(start.body.authorizeUrl, { redirect: 'manual' });
  expect(consent.status).toBe(302);
  const location = new URL(consent.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(`${PUBLIC_BASE}/v1/capabilities/suite-365/oauth/callback`);
  return `${location.pathname}${location.search}`;
}

async function connect(token: string): Promise<void> {
  const callback = await t.http.get(await authorizeRedirect(token));
  expect(callback.status).toBe(200);
  expect(callback.body).toEqual({ ok: true });
}

const send = (token: string, content = 'Hello from the control plane', chatId = CHAT) =>
  t.http.post(`/v1/capabilities/suite-365/suite-chats/${encodeURIComponent(chatId)}/messages`).set(...bearer(token)).send({ content });

describe('suite OAuth client', () => {
  it('is set by an admin, never returns the secret, and reports its state', async () => {
    const owner = await createOrganization(t);
    const before = await t.http.get('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token));
    expect(before.body).toEqual({ ok: true, item: { configured: false, tenantId: null, clientId: null, hasClientSecret: false, features: [], updatedAt: null } });
    const put = await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send(clientBody);
    expect(put.status).toBe(200);
    const item = { configured: true, tenantId: TENANT, clientId: CLIENT_ID, hasClientSecret: true, features: ['chatSend'], updatedAt: t.clock.now().toISOString() };
    expect(put.body).toEqual({ ok: true, item });
    expect(put.text).not.toContain(CLIENT_SECRET);
    const get = await t.http.get('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token));
    expect(get.body).toEqual({ ok: true, item });
  });

  it('needs an admin, a session or key, and a valid body', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const forbidden = await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(member.token)).send(clientBody);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    expect((await t.http.put('/v1/capabilities/suite-365/oauth-client').send(clientBody)).status).toBe(401);
    const badTenant = await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send({ ...clientBody, tenantId: '../evil' });
    expect(badTenant.status).toBe(400);
    expect(badTenant.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'tenantId'] }));
    const badFeature = await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send({ ...clientBody, features: ['chatCreate'] });
    expect(badFeature.body.details[0].path).toEqual(['body', 'features', '0']);
    const missing = await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send({ tenantId: TENANT, clientId: CLIENT_ID, features: [] });
    expect(missing.body.details).toContainEqual({ message: 'is required', path: ['body', 'clientSecret'] });
  });
});

describe('connecting a member account', () => {
  it('runs authorization code + PKCE through the identity platform and stores the account', async () => {
    const owner = await orgWithClient();
    const start = await t.http.post('/v1/capabilities/suite-365/connect/start').set(...bearer(owner.token));
    expect(start.status).toBe(200);
    const url = new URL(start.body.authorizeUrl);
    expect(`${url.origin}${url.pathname}`).toBe(`${identity.baseUrl}/${TENANT}/oauth2/v2.0/authorize`);
    const q = url.searchParams;
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe(CLIENT_ID);
    expect(q.get('redirect_uri')).toBe(`${PUBLIC_BASE}/v1/capabilities/suite-365/oauth/callback`);
    expect(q.get('scope')!.split(' ')).toEqual(expect.arrayContaining(['offline_access', 'ChatMessage.Send']));
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toBeTruthy();

    const consent = await fetch(start.body.authorizeUrl, { redirect: 'manual' });
    const location = new URL(consent.headers.get('location')!);
    const callback = await t.http.get(`${location.pathname}${location.search}`);
    expect(callback.status).toBe(200);
    expect(callback.body).toEqual({ ok: true });
    const exchange = identity.tokenRequests.at(-1)!;
    expect(exchange.tenant).toBe(TENANT);
    expect(exchange.params).toMatchObject({ grant_type: 'authorization_code', client_id: CLIENT_ID, redirect_uri: q.get('redirect_uri') });
    expect(exchange.params.code_verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);

    const connection = await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(owner.token));
    expect(connection.body).toEqual({ connected: true, connectedAt: t.clock.now().toISOString(), scopes: expect.arrayContaining(['offline_access', 'ChatMessage.Send']) });
  });

  it('refuses a forged, reused or expired state with 400', async () => {
    const owner = await orgWithClient();
    const callbackPath = await authorizeRedirect(owner.token);
    const forged = await t.http.get(callbackPath.replace(/state=[^&]+/, 'state=abc.def'));
    expect(forged.status).toBe(400);
    expect(forged.body.details).toContainEqual(expect.objectContaining({ path: ['query', 'state'] }));
    expect((await t.http.get(callbackPath)).status).toBe(200);
    const reused = await t.http.get(callbackPath);
    expect(reused.status).toBe(400);
    expect(reused.body.details[0].path).toEqual(['query', 'state']);

    const late = await authorizeRedirect(owner.token);
    clock().advance(11 * 60_000);
    try {
      const expired = await t.http.get(late);
      expect(expired.status).toBe(400);
      expect(expired.body.details[0].path).toEqual(['query', 'state']);
    } finally {
      clock().advance(-11 * 60_000);
    }
    const missingState = await t.http.get('/v1/capabilities/suite-365/oauth/callback?code=x');
    expect(missingState.status).toBe(400);
    expect(missingState.body.details).toContainEqual({ message: 'is required', path: ['query', 'state'] });
  });

  it('answers 502 suite_api_error when the code exchange fails', async () => {
    const owner = await orgWithClient();
    const callbackPath = await authorizeRedirect(owner.token);
    identity.failNextToken = { status: 400, body: { error: 'invalid_grant', error_description: 'AADSTS70008: expired' } };
    const res = await t.http.get(callbackPath);
    expect(res.status).toBe(502);
    expect(res.body.error).toBe('suite_api_error');
    expect(res.body.message).toContain('400');
    expect((await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(owner.token))).body.connected).toBe(false);
  });

  it('needs a session (not an API key) and an organization client to start', async () => {
    const owner = await createOrganization(t);
    const none = await t.http.post('/v1/capabilities/suite-365/connect/start').set(...bearer(owner.token));
    expect(none.status).toBe(409);
    expect(none.body.error).toBe('needs_connection');
    const key = randomSecret('cpk');
    await t.db
      .insertInto('api_keys')
      .values({ id: newId('apiKey'), organization_id: owner.organizationId, member_id: owner.memberId, name: 'k', prefix: key.slice(0, 12), key_hash: sha256Hex(key), created_at: t.clock.now(), expires_at: null, last_used_at: null, revoked_at: null })
      .execute();
    const withKey = await t.http.post('/v1/capabilities/suite-365/connect/start').set('x-api-key', key);
    expect(withKey.status).toBe(401);
  });

  it('disconnects with DELETE, which also cancels a pending sign-in', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    const pending = await authorizeRedirect(owner.token);
    const del = await t.http.delete('/v1/capabilities/suite-365/connection').set(...bearer(owner.token));
    expect(del.status).toBe(204);
    expect((await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(owner.token))).body).toEqual({ connected: false, connectedAt: null, scopes: [] });
    const late = await t.http.get(pending);
    expect(late.status).toBe(400);
    expect((await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(owner.token))).body.connected).toBe(false);
    expect((await t.http.delete('/v1/capabilities/suite-365/connection').set(...bearer(owner.token))).status).toBe(204);
  });

  it('disconnects every member when the tenant or client changes', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send({ ...clientBody, features: [] });
    expect((await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(owner.token))).body.connected).toBe(true);
    await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send({ ...clientBody, clientId: 'another-app' });
    expect((await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(owner.token))).body.connected).toBe(false);
  });
});

describe('the callback as the identity platform sends it (docs/egress.md#oauth-callbacks)', () => {
  const connected = async (token: string) => (await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(token))).body.connected;

  it('ignores session_state and other unknown parameters', async () => {
    const owner = await orgWithClient();
    const callback = await authorizeRedirect(owner.token);
    expect(new URL(callback, PUBLIC_BASE).searchParams.get('session_state')).toBeTruthy();
    const res = await t.http.get(`${callback}&unknown_extension=1`);
    expect(res.status).toBe(200);
    expect(await connected(owner.token)).toBe(true);
  });

  it('accepts the tenant issuer in iss (RFC 9207) and refuses another issuer, storing nothing', async () => {
    const owner = await orgWithClient();
    identity.issOverride = identity.issuer(TENANT);
    try {
      expect((await t.http.get(await authorizeRedirect(owner.token))).status).toBe(200);
      const other = await orgWithClient();
      identity.issOverride = 'https://attacker.example/v2.0';
      const res = await t.http.get(await authorizeRedirect(other.token));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), details: [{ path: ['query', 'iss'], message: expect.any(String) }] });
      expect(await connected(other.token)).toBe(false);
    } finally {
      identity.issOverride = null;
    }
  });

  it('turns a provider error redirect into 400 oauth_error and consumes the state', async () => {
    const owner = await orgWithClient();
    identity.denyNext = { error: 'access_denied', error_description: 'AADSTS65004: User declined to consent to access the app.' };
    const callback = await authorizeRedirect(owner.token);
    const res = await t.http.get(callback);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'oauth_error', message: expect.stringContaining('access_denied') });
    const again = await t.http.get(callback);
    expect(again.status).toBe(400);
    expect(again.body.details[0].path).toEqual(['query', 'state']);
    expect(await connected(owner.token)).toBe(false);
  });
});

describe('sending a chat message', () => {
  it('posts a chatMessage to the existing chat as the member and maps the reply', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    const res = await send(owner.token, 'Ship it');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      message: {
        id: expect.any(String),
        createdDateTime: '2026-11-22T10:00:00.123Z',
        content: 'Ship it',
        from: { name: 'Ada Lovelace', address: '7d6f0c1e-0000-4000-8000-000000000001' },
        webUrl: expect.stringContaining('https://suite.example/l/message/'),
      },
    });
    const received = graph.received.at(-1)!;
    expect(received.chatId).toBe(CHAT);
    expect(received.body).toEqual({ body: { contentType: 'text', content: 'Ship it' } });
    expect(identity.validAccessTokens.has(received.token)).toBe(true);
  });

  it('refreshes an expired access token first, then sends', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    const before = graph.received.length;
    clock().advance(2 * 3600_000);
    try {
      identity.revokeAccessTokens(); // the old one would be refused now
      const res = await send(owner.token, 'after expiry');
      expect(res.status).toBe(200);
      expect(identity.tokenRequests.at(-1)!.params).toMatchObject({ grant_type: 'refresh_token', client_id: CLIENT_ID });
      expect(graph.received.length).toBe(before + 1);
      expect(identity.validAccessTokens.has(graph.received.at(-1)!.token)).toBe(true);
      // The refreshed token is stored: the next send does not refresh again.
      const refreshes = identity.tokenRequests.length;
      expect((await send(owner.token, 'again')).status).toBe(200);
      expect(identity.tokenRequests.length).toBe(refreshes);
    } finally {
      clock().advance(-2 * 3600_000);
    }
  });

  it('two processes sending with one expired token: one refresh reaches the provider, both sends succeed', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    // A second app instance on the same database and clock: another process of the service.
    const other = await createTestApp({ database: t.database, clock: t.clock, settings: t.settings });
    clock().advance(2 * 3600_000);
    identity.refreshDelayMs = 300;
    try {
      identity.revokeAccessTokens();
      const refreshesBefore = identity.tokenRequests.filter((r) => r.params.grant_type === 'refresh_token').length;
      const [a, b] = await Promise.all([send(owner.token, 'from process one'), other.http.post(`/v1/capabilities/suite-365/suite-chats/${encodeURIComponent(CHAT)}/messages`).set(...bearer(owner.token)).send({ content: 'from process two' })]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(identity.tokenRequests.filter((r) => r.params.grant_type === 'refresh_token').length).toBe(refreshesBefore + 1);
    } finally {
      identity.refreshDelayMs = 0;
      clock().advance(-2 * 3600_000);
      await other.close();
    }
  }, 120_000);

  it('answers 502 when the refresh fails, without tokens in the message', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    clock().advance(2 * 3600_000);
    try {
      identity.failRefresh = { status: 400, body: { error: 'invalid_grant', error_description: 'AADSTS700082: The refresh token has expired.' } };
      const res = await send(owner.token);
      expect(res.status).toBe(502);
      expect(res.body.error).toBe('suite_api_error');
      expect(res.body.message).toMatch(/refresh/i);
      expect(res.body.message).toContain('400');
      for (const secret of identity.issuedSecrets) expect(res.text).not.toContain(secret);
    } finally {
      clock().advance(-2 * 3600_000);
    }
  });

  it.each([
    [403, 'Forbidden'],
    [404, 'NotFound'],
    [500, 'InternalServerError'],
  ])('answers 502 with the status when Graph answers %i', async (status, code) => {
    const owner = await orgWithClient();
    await connect(owner.token);
    graph.next.push({ status, body: { error: { code, message: 'Something about the chat.' } } });
    const res = await send(owner.token);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: 'suite_api_error', message: expect.stringContaining(String(status)) });
    expect(res.body.message).toContain(code);
    for (const secret of identity.issuedSecrets) expect(res.text).not.toContain(secret);
  });

  it('answers 502 for an unknown chat (it never creates one)', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    const res = await send(owner.token, 'hello', '19:nope@thread.v2');
    expect(res.status).toBe(502);
    expect(res.body.message).toContain('404');
  });

  it('answers 502 for 429 with Retry-After, a timeout and an unreadable reply', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    graph.next.push({ status: 429, body: { error: { code: 'TooManyRequests', message: 'Slow down.' } }, headers: { 'Retry-After': '7' } });
    const limited = await send(owner.token);
    expect(limited.status).toBe(502);
    expect(limited.body.message).toContain('429');
    expect(limited.body.message).toContain('retry after 7');

    graph.next.push({ status: 201, body: {}, delayMs: 1500 });
    const started = Date.now();
    const slow = await send(owner.token);
    expect(slow.status).toBe(502);
    expect(slow.body.message).toMatch(/within 500 ms/);
    expect(Date.now() - started).toBeLessThan(1400);

    graph.next.push({ status: 201, raw: '<html>not json</html>' });
    const unreadable = await send(owner.token);
    expect(unreadable.status).toBe(502);
    expect(unreadable.body.message).toMatch(/unreadable/);
  });

  it('refreshes once when Graph refuses a token before its expiry', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    identity.revokeAccessTokens();
    const res = await send(owner.token);
    expect(res.status).toBe(200);
    expect(identity.tokenRequests.at(-1)!.params.grant_type).toBe('refresh_token');
  });

  it('answers 409 needs_connection without a client, with chatSend off, or without an account', async () => {
    const owner = await createOrganization(t);
    const noClient = await send(owner.token);
    expect(noClient.status).toBe(409);
    expect(noClient.body).toEqual({ error: 'needs_connection', message: expect.any(String) });
    await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send({ ...clientBody, features: [] });
    await connect(owner.token);
    expect((await send(owner.token)).status).toBe(409);
    await t.http.put('/v1/capabilities/suite-365/oauth-client').set(...bearer(owner.token)).send(clientBody);
    const member = await addMember(t, owner.organizationId);
    const noAccount = await send(member.token);
    expect(noAccount.status).toBe(409);
    expect(noAccount.body.error).toBe('needs_connection');
  });

  it('validates the request and needs authentication', async () => {
    const owner = await orgWithClient();
    expect((await t.http.post(`/v1/capabilities/suite-365/suite-chats/${CHAT}/messages`).send({ content: 'x' })).status).toBe(401);
    const empty = await send(owner.token, '');
    expect(empty.status).toBe(400);
    expect(empty.body.details).toContainEqual(expect.objectContaining({ path: ['body', 'content'] }));
    const extra = await t.http.post(`/v1/capabilities/suite-365/suite-chats/${CHAT}/messages`).set(...bearer(owner.token)).send({ content: 'x', chatType: 'group' });
    expect(extra.body.details).toContainEqual({ message: 'is not allowed', path: ['body', 'chatType'] });
    const long = await send(owner.token, 'x'.repeat(20001));
    expect(long.status).toBe(400);
  });

  it("keeps one organization's accounts from another organization's members", async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    const outsider = await createOrganization(t, 'Other');
    const before = graph.received.length;
    const res = await send(outsider.token);
    expect(res.status).toBe(409);
    expect(graph.received.length).toBe(before);
    expect((await t.http.get('/v1/capabilities/suite-365/connection').set(...bearer(outsider.token))).body.connected).toBe(false);
    expect((await t.http.get('/v1/capabilities/suite-365/oauth-client').set(...bearer(outsider.token))).body.item.configured).toBe(false);
    // A member of the organization who has not connected cannot use the owner's account either.
    const member = await addMember(t, owner.organizationId);
    expect((await send(member.token)).status).toBe(409);
  });
});

describe('secrets at rest', () => {
  it('never stores tokens or the client secret in plain text', async () => {
    const owner = await orgWithClient();
    await connect(owner.token);
    clock().advance(2 * 3600_000);
    try {
      expect((await send(owner.token)).status).toBe(200); // a refresh stores new tokens too
    } finally {
      clock().advance(-2 * 3600_000);
    }
    const verifiers = identity.tokenRequests.flatMap((r) => (r.params.code_verifier ? [r.params.code_verifier] : []));
    const needles = [...identity.issuedSecrets, ...verifiers];
    expect(needles.length).toBeGreaterThan(4);
    expect(await scannedColumnCount(t.db)).toBeGreaterThan(20);
    expect(await findPlainText(t.db, needles)).toEqual([]);
    expect(t.logs.join('')).not.toContain(CLIENT_SECRET);
  });
});
