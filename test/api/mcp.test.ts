import { LOCAL_FAKES, createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { FakeOAuthServer } from '../fakes/oauth-server';
import { findPlainText } from '../fakes/oauth-db-scan';
import type { ManualClock } from '../support/clock';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';

const PUBLIC_BASE = 'http://cp.example.test';
const CLIENT_ID = 'mcp-client-1';
const CLIENT_SECRET = 'mcp-client-secret-9f8e7d';
const SHARED_KEY = 'shared-mcp-api-key-4b3c2a';
const UNKNOWN_ID = 'emc_01h2xcejqtf2nbrexx3vqjhp41';

let t: TestApp;
let auth: FakeOAuthServer;
const clock = () => t.clock as ManualClock;

beforeAll(async () => {
  auth = await new FakeOAuthServer({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }).start();
  t = await createTestApp({ env: LOCAL_FAKES, settings: { publicBaseUrl: PUBLIC_BASE } });
});
afterAll(async () => {
  await t.close();
  await auth.stop();
});
afterEach(() => {
  auth.failNextToken = null;
});

const oauthClient = () => ({ authorizationUrl: auth.authorizeEndpoint(), tokenUrl: auth.tokenEndpoint(), clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scopes: ['tools.read', 'tools.call'] });

async function create(token: string, body: Record<string, unknown>) {
  return t.http.post('/v1/mcp-connections').set(...bearer(token)).send(body);
}

async function perMemberOAuth(owner: OrgOwner, access: Record<string, unknown> = { orgWide: true }): Promise<string> {
  const res = await create(owner.token, { name: 'Tracker', url: 'https://mcp.tracker.example/mcp', authType: 'oauth', credentialMode: 'per_member', oauthClient: oauthClient(), access });
  expect(res.status).toBe(201);
  return res.body.item.id;
}

async function team(organizationId: string, memberIds: string[]): Promise<string> {
  const id = newId('team');
  const now = t.clock.now();
  await t.db.insertInto('teams').values({ id, organization_id: organizationId, name: `team ${id.slice(-4)}`, created_at: now, updated_at: now }).execute();
  for (const memberId of memberIds) await t.db.insertInto('team_members').values({ team_id: id, member_id: memberId, organization_id: organizationId, created_at: now }).execute();
  return id;
}

/** connect/start → the fake's authorize endpoint (consent) → the callback path it redirects to. */
async function authorizeRedirect(token: string, connectionId: string): Promise<string> {
  const start = await t.http.post(`/v1/mcp-connections/${connectionId}/connect/start`).set(...bearer(token));
  expect(start.status).toBe(200);
  const consent = await fetch(start.body.authorizeUrl, { redirect: 'manual' });
  expect(consent.status).toBe(302);
  const location = new URL(consent.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(`${PUBLIC_BASE}/v1/mcp-connections/oauth/callback`);
  return `${location.pathname}${location.search}`;
}

async function connectOAuth(token: string, connectionId: string): Promise<void> {
  const res = await t.http.get(await authorizeRedirect(token, connectionId));
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ ok: true });
}

const get = (token: string, id: string) => t.http.get(`/v1/mcp-connections/${id}`).set(...bearer(token));

describe('MCP connections: create, read, update, delete', () => {
  it('creates a shared API-key connection and never returns the key', async () => {
    const owner = await createOrganization(t);
    const res = await create(owner.token, { name: 'Docs', url: 'https://mcp.docs.example/sse', authType: 'apikey', credentialMode: 'shared', apiKey: SHARED_KEY, access: { orgWide: true } });
    expect(res.status).toBe(201);
    const now = t.clock.now().toISOString();
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(/^emc_[0-9a-z]{26}$/),
        organizationId: owner.organizationId,
        name: 'Docs',
        url: 'https://mcp.docs.example/sse',
        authType: 'apikey',
        credentialMode: 'shared',
        hasApiKey: true,
        oauthClient: null,
        access: { orgWide: true, memberIds: [], teamIds: [] },
        connectedForMe: true,
        createdByOrgMembershipId: owner.memberId,
        createdAt: now,
        updatedAt: now,
      },
    });
    expect(res.text).not.toContain(SHARED_KEY);
    const got = await get(owner.token, res.body.item.id);
    expect(got.body).toEqual(res.body);
  });

  it('creates a per-member OAuth connection with its client (secret write-only)', async () => {
    const owner = await createOrganization(t);
    const id = await perMemberOAuth(owner, {});
    const res = await get(owner.token, id);
    expect(res.body.item).toMatchObject({
      authType: 'oauth',
      credentialMode: 'per_member',
      hasApiKey: false,
      connectedForMe: false,
      access: { orgWide: false, memberIds: [], teamIds: [] },
      oauthClient: { authorizationUrl: auth.authorizeEndpoint(), tokenUrl: auth.tokenEndpoint(), clientId: CLIENT_ID, scopes: ['tools.read', 'tools.call'], hasClientSecret: true, issuer: null, issParameterSupported: false },
    });
    expect(res.text).not.toContain(CLIENT_SECRET);
  });

  it('needs authentication and an admin to write', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const body = { name: 'x', url: 'https://x.example', authType: 'none', credentialMode: 'shared' };
    expect((await t.http.post('/v1/mcp-connections').send(body)).status).toBe(401);
    const forbidden = await create(member.token, body);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    const id = (await create(owner.token, { ...body, access: { orgWide: true } })).body.item.id;
    const patch = await t.http.patch(`/v1/mcp-connections/${id}`).set(...bearer(member.token)).send({ name: 'y' });
    expect(patch.status).toBe(403);
    expect(patch.body.reason).toBe('org_admin_required');
    const del = await t.http.delete(`/v1/mcp-connections/${id}`).set(...bearer(member.token));
    expect(del.status).toBe(403);
    expect((await get(owner.token, id)).body.item.name).toBe('x');
  });

  it('rejects bad input with the field in the path', async () => {
    const owner = await createOrganization(t);
    const base = { name: 'x', url: 'https://x.example', authType: 'apikey', credentialMode: 'shared', apiKey: 'k' };
    const cases: [Record<string, unknown>, string[]][] = [
      [{ ...base, url: 'javascript:alert(1)' }, ['body', 'url']],
      [{ ...base, name: '' }, ['body', 'name']],
      [{ ...base, credentialMode: 'team' }, ['body', 'credentialMode']],
      [{ ...base, extra: true }, ['body', 'extra']],
      [{ ...base, apiKey: undefined }, ['body', 'apiKey']],
      [{ ...base, authType: 'oauth', apiKey: undefined }, ['body', 'authType']],
      [{ ...base, credentialMode: 'per_member', authType: 'oauth', apiKey: undefined }, ['body', 'oauthClient']],
      [{ ...base, credentialMode: 'per_member', authType: 'none', apiKey: undefined }, ['body', 'authType']],
      [{ ...base, credentialMode: 'per_member' }, ['body', 'apiKey']],
      [{ ...base, access: { memberIds: ['usr_01h2xcejqtf2nbrexx3vqjhp41'] } }, ['body', 'access', 'memberIds', '0']],
    ];
    for (const [body, path] of cases) {
      const res = await create(owner.token, body);
      expect({ status: res.status, path: res.body.details?.[0]?.path }).toEqual({ status: 400, path });
    }
    expect((await get(owner.token, 'emc_nope')).body.details[0].path).toEqual(['path', 'connectionId']);
    const limit = await t.http.get('/v1/mcp-connections?limit=0').set(...bearer(owner.token));
    expect(limit.body.details[0].path).toEqual(['query', 'limit']);
    const cursor = await t.http.get('/v1/mcp-connections?cursor=forged').set(...bearer(owner.token));
    expect(cursor.body.details[0].path).toEqual(['query', 'cursor']);
  });

  it('refuses grants to members or teams of another organization (404)', async () => {
    const owner = await createOrganization(t);
    const other = await createOrganization(t, 'Other');
    const base = { name: 'x', url: 'https://x.example', authType: 'none', credentialMode: 'shared' };
    const member = await create(owner.token, { ...base, access: { memberIds: [other.memberId] } });
    expect(member.status).toBe(404);
    expect(member.body.error).toBe('member_not_found');
    const otherTeam = await team(other.organizationId, [other.memberId]);
    const teamRes = await create(owner.token, { ...base, access: { teamIds: [otherTeam] } });
    expect(teamRes.status).toBe(404);
    expect(teamRes.body.error).toBe('team_not_found');
  });

  it('updates fields and replaces grants; secrets stay write-only', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await perMemberOAuth(owner, { orgWide: true });
    const res = await t.http
      .patch(`/v1/mcp-connections/${id}`)
      .set(...bearer(owner.token))
      .send({ name: 'Renamed', oauthClient: { scopes: ['tools.call'], clientSecret: 'rotated-secret-123' }, access: { memberIds: [member.memberId] } });
    expect(res.status).toBe(200);
    expect(res.body.item).toMatchObject({ name: 'Renamed', access: { orgWide: false, memberIds: [member.memberId], teamIds: [] } });
    expect(res.body.item.oauthClient).toMatchObject({ clientId: CLIENT_ID, scopes: ['tools.call'], hasClientSecret: true });
    expect(res.text).not.toContain('rotated-secret-123');
    const revoked = await t.db.selectFrom('mcp_connection_grants').select(['org_wide', 'removed_at']).where('connection_id', '=', id).where('org_wide', '=', true).executeTakeFirstOrThrow();
    expect(revoked.removed_at).not.toBeNull();
    const wrongKind = await t.http.patch(`/v1/mcp-connections/${id}`).set(...bearer(owner.token)).send({ apiKey: 'x' });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body.details[0].path).toEqual(['body', 'apiKey']);
    const empty = await t.http.patch(`/v1/mcp-connections/${id}`).set(...bearer(owner.token)).send({});
    expect(empty.status).toBe(400);
  });

  it('deletes a connection with its grants and accounts', async () => {
    const owner = await createOrganization(t);
    const id = await perMemberOAuth(owner);
    await connectOAuth(owner.token, id);
    expect((await t.http.delete(`/v1/mcp-connections/${id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await get(owner.token, id)).status).toBe(404);
    expect((await t.http.delete(`/v1/mcp-connections/${id}`).set(...bearer(owner.token))).status).toBe(404);
    const accounts = await t.db.selectFrom('connected_accounts').select('id').where('connection_id', '=', id).execute();
    expect(accounts).toEqual([]);
  });

  it("hides one organization's connections from another's members (404, nothing changes)", async () => {
    const owner = await createOrganization(t);
    const id = await perMemberOAuth(owner);
    const outsider = await createOrganization(t, 'Other');
    const get404 = await get(outsider.token, id);
    expect(get404.status).toBe(404);
    expect(get404.body.error).toBe('connection_not_found');
    expect((await t.http.patch(`/v1/mcp-connections/${id}`).set(...bearer(outsider.token)).send({ name: 'pwned' })).status).toBe(404);
    expect((await t.http.delete(`/v1/mcp-connections/${id}`).set(...bearer(outsider.token))).status).toBe(404);
    expect((await t.http.post(`/v1/mcp-connections/${id}/connect/start`).set(...bearer(outsider.token))).status).toBe(404);
    expect((await t.http.put(`/v1/mcp-connections/${id}/my-credential`).set(...bearer(outsider.token)).send({ apiKey: 'k' })).status).toBe(404);
    const list = await t.http.get('/v1/mcp-connections').set(...bearer(outsider.token));
    expect(list.body).toEqual({ items: [], nextCursor: null });
    const still = await get(owner.token, id);
    expect(still.body.item.name).toBe('Tracker');
  });
});

describe('MCP connections: who may use them', () => {
  it('lists all for admins and only granted ones (direct, team, org-wide) for members, paged', async () => {
    const owner = await createOrganization(t);
    const alice = await addMember(t, owner.organizationId);
    const bob = await addMember(t, owner.organizationId);
    const aliceTeam = await team(owner.organizationId, [alice.memberId]);
    const base = { url: 'https://x.example', authType: 'none', credentialMode: 'shared' };
    const ids: Record<string, string> = {};
    for (const [name, access] of [
      ['hidden', {}],
      ['direct', { memberIds: [alice.memberId] }],
      ['team', { teamIds: [aliceTeam] }],
      ['everyone', { orgWide: true }],
    ] as const) {
      clock().advance(1000);
      ids[name] = (await create(owner.token, { ...base, name, access })).body.item.id;
    }
    const names = async (token: string) => (await t.http.get('/v1/mcp-connections').set(...bearer(token))).body.items.map((i: { name: string }) => i.name);
    expect(await names(owner.token)).toEqual(['everyone', 'team', 'direct', 'hidden']);
    expect(await names(alice.token)).toEqual(['everyone', 'team', 'direct']);
    expect(await names(bob.token)).toEqual(['everyone']);
    expect((await get(bob.token, ids.direct!)).status).toBe(404);
    expect((await get(alice.token, ids.team!)).status).toBe(200);

    const page1 = await t.http.get('/v1/mcp-connections?limit=2').set(...bearer(owner.token));
    expect(page1.body.items.map((i: { name: string }) => i.name)).toEqual(['everyone', 'team']);
    const page2 = await t.http.get(`/v1/mcp-connections?limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`).set(...bearer(owner.token));
    expect(page2.body.items.map((i: { name: string }) => i.name)).toEqual(['direct', 'hidden']);
    expect(page2.body.nextCursor).toBeNull();
  });

  it('stores a per-member API key for a granted member (session only)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const stranger = await addMember(t, owner.organizationId);
    const res = await create(owner.token, { name: 'Keys', url: 'https://k.example', authType: 'apikey', credentialMode: 'per_member', access: { memberIds: [member.memberId] } });
    const id = res.body.item.id;
    expect(res.body.item.connectedForMe).toBe(false);
    const put = await t.http.put(`/v1/mcp-connections/${id}/my-credential`).set(...bearer(member.token)).send({ apiKey: 'member-own-key-123' });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ ok: true, connectedAt: t.clock.now().toISOString() });
    expect((await get(member.token, id)).body.item.connectedForMe).toBe(true);
    expect((await get(owner.token, id)).body.item.connectedForMe).toBe(false);
    expect((await t.http.put(`/v1/mcp-connections/${id}/my-credential`).set(...bearer(stranger.token)).send({ apiKey: 'x' })).status).toBe(404);
    const missing = await t.http.put(`/v1/mcp-connections/${id}/my-credential`).set(...bearer(member.token)).send({});
    expect(missing.body.details).toContainEqual({ message: 'is required', path: ['body', 'apiKey'] });

    const key = randomSecret('cpk');
    await t.db
      .insertInto('api_keys')
      .values({ id: newId('apiKey'), organization_id: owner.organizationId, member_id: member.memberId, name: 'k', prefix: key.slice(0, 12), key_hash: sha256Hex(key), created_at: t.clock.now(), expires_at: null, last_used_at: null, revoked_at: null })
      .execute();
    expect((await t.http.put(`/v1/mcp-connections/${id}/my-credential`).set('x-api-key', key).send({ apiKey: 'x' })).status).toBe(401);
    expect((await t.http.post(`/v1/mcp-connections/${id}/connect/start`).set('x-api-key', key)).status).toBe(401);

    const oauthId = await perMemberOAuth(owner);
    const wrongKind = await t.http.put(`/v1/mcp-connections/${oauthId}/my-credential`).set(...bearer(member.token)).send({ apiKey: 'x' });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body.details[0].path).toEqual(['path', 'connectionId']);
    const startWrong = await t.http.post(`/v1/mcp-connections/${id}/connect/start`).set(...bearer(member.token));
    expect(startWrong.status).toBe(400);
  });
});

describe('MCP connections: OAuth connect', () => {
  it('connects through authorization code + PKCE and the callback', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await perMemberOAuth(owner);
    const start = await t.http.post(`/v1/mcp-connections/${id}/connect/start`).set(...bearer(member.token));
    const url = new URL(start.body.authorizeUrl);
    expect(`${url.origin}${url.pathname}`).toBe(auth.authorizeEndpoint());
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: `${PUBLIC_BASE}/v1/mcp-connections/oauth/callback`,
      scope: 'tools.read tools.call',
      code_challenge_method: 'S256',
    });
    const consent = await fetch(start.body.authorizeUrl, { redirect: 'manual' });
    const location = new URL(consent.headers.get('location')!);
    const callback = await t.http.get(`${location.pathname}${location.search}`);
    expect(callback.status).toBe(200);
    expect(callback.body).toEqual({ ok: true });
    expect(auth.tokenRequests.at(-1)!.params).toMatchObject({ grant_type: 'authorization_code', client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
    expect((await get(member.token, id)).body.item.connectedForMe).toBe(true);
    expect((await get(owner.token, id)).body.item.connectedForMe).toBe(false);
  });

  it('refuses a forged, reused or expired state, and reports a failing token endpoint as 502', async () => {
    const owner = await createOrganization(t);
    const id = await perMemberOAuth(owner);
    const path = await authorizeRedirect(owner.token, id);
    const forged = await t.http.get(path.replace(/state=[^&]+/, 'state=' + 'a'.repeat(43) + '.' + 'b'.repeat(43)));
    expect(forged.status).toBe(400);
    expect(forged.body.details[0].path).toEqual(['query', 'state']);
    expect((await t.http.get(path)).status).toBe(200);
    const reused = await t.http.get(path);
    expect(reused.status).toBe(400);
    expect(reused.body.details[0].path).toEqual(['query', 'state']);

    const late = await authorizeRedirect(owner.token, id);
    clock().advance(11 * 60_000);
    try {
      expect((await t.http.get(late)).status).toBe(400);
    } finally {
      clock().advance(-11 * 60_000);
    }

    const failing = await authorizeRedirect(owner.token, id);
    auth.failNextToken = { status: 503, body: { error: 'temporarily_unavailable' } };
    const upstream = await t.http.get(failing);
    expect(upstream.status).toBe(502);
    expect(upstream.body).toEqual({ error: 'mcp_oauth_error', message: expect.stringContaining('503') });

    const denied = await authorizeRedirect(owner.token, id);
    const refused = await t.http.get(denied.replace(/code=[^&]+/, 'error=access_denied'));
    expect(refused.status).toBe(400);
    // A provider error redirect ends the flow with oauth_error (docs/egress.md#oauth-callbacks).
    expect(refused.body).toEqual({ error: 'oauth_error', message: expect.stringContaining('access_denied') });
  });

  it('a state from the suite flow is not accepted by the MCP callback', async () => {
    const owner = await createOrganization(t);
    const id = await perMemberOAuth(owner);
    const path = await authorizeRedirect(owner.token, id);
    const res = await t.http.get(path.replace('/v1/mcp-connections/oauth/callback', '/v1/capabilities/suite-365/oauth/callback'));
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toEqual(['query', 'state']);
    expect((await t.http.get(path)).status).toBe(200);
  });
});

describe('disconnect-my-account', () => {
  it('removes only my account; connection, secrets, grants, OAuth client and other accounts stay', async () => {
    const owner = await createOrganization(t);
    const alice = await addMember(t, owner.organizationId);
    const bob = await addMember(t, owner.organizationId);
    const id = await perMemberOAuth(owner, { orgWide: true, memberIds: [alice.memberId] });
    await connectOAuth(alice.token, id);
    await connectOAuth(bob.token, id);
    const snapshot = async () => ({
      connection: await t.db.selectFrom('mcp_connections').selectAll().where('id', '=', id).execute(),
      grants: await t.db.selectFrom('mcp_connection_grants').selectAll().where('connection_id', '=', id).orderBy('id').execute(),
      bob: await t.db.selectFrom('connected_accounts').selectAll().where('connection_id', '=', id).where('member_id', '=', bob.memberId).execute(),
    });
    const before = await snapshot();
    const itemBefore = (await get(owner.token, id)).body.item;

    const res = await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`).set(...bearer(alice.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });

    const after = await snapshot();
    expect(after.connection).toEqual(before.connection); // the connection and its sealed client secret
    expect(after.connection[0]!.oauth_client_secret_sealed).not.toBeNull();
    expect(after.grants).toEqual(before.grants);
    expect(after.bob).toEqual(before.bob);
    expect(after.bob).toHaveLength(1);
    expect((await get(owner.token, id)).body.item).toEqual(itemBefore);
    expect((await get(alice.token, id)).body.item.connectedForMe).toBe(false);
    expect((await get(bob.token, id)).body.item.connectedForMe).toBe(true);
    const aliceRows = await t.db.selectFrom('connected_accounts').select('id').where('member_id', '=', alice.memberId).execute();
    expect(aliceRows).toEqual([]);

    const again = await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`).set(...bearer(alice.token));
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: 'connection_not_found', message: expect.any(String) });
  });

  it('keeps a shared connection and its shared key (400)', async () => {
    const owner = await createOrganization(t);
    const res = await create(owner.token, { name: 'Docs', url: 'https://d.example', authType: 'apikey', credentialMode: 'shared', apiKey: SHARED_KEY, access: { orgWide: true } });
    const id = res.body.item.id;
    const shared = await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`).set(...bearer(owner.token));
    expect(shared.status).toBe(400);
    expect(shared.body.error).toBe('invalid_request');
    expect(shared.body.details[0].path).toEqual(['path', 'connectionId']);
    expect((await get(owner.token, id)).body.item).toMatchObject({ hasApiKey: true, connectedForMe: true });
  });

  it('answers 404 for an unknown or foreign connection and when nothing is connected; 401 and 400 too', async () => {
    const owner = await createOrganization(t);
    const id = await perMemberOAuth(owner);
    await connectOAuth(owner.token, id);
    const outsider = await createOrganization(t, 'Other');
    const foreign = await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`).set(...bearer(outsider.token));
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('connection_not_found');
    expect((await get(owner.token, id)).body.item.connectedForMe).toBe(true);
    const unknown = await t.http.post(`/v1/mcp-connections/${UNKNOWN_ID}/disconnect-my-account`).set(...bearer(owner.token));
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('connection_not_found');
    const member = await addMember(t, owner.organizationId);
    const nothing = await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`).set(...bearer(member.token));
    expect(nothing.status).toBe(404);
    expect(nothing.body.error).toBe('connection_not_found');
    expect((await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`)).status).toBe(401);
    const bad = await t.http.post('/v1/mcp-connections/mkt_01h2xcejqtf2nbrexx3vqjhp41/disconnect-my-account').set(...bearer(owner.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'connectionId']);
  });

  it('invalidates a pending OAuth start, so a late callback cannot re-create the account', async () => {
    const owner = await createOrganization(t);
    const id = await perMemberOAuth(owner);
    await connectOAuth(owner.token, id);
    const pending = await authorizeRedirect(owner.token, id);
    expect((await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`).set(...bearer(owner.token))).status).toBe(200);
    const late = await t.http.get(pending);
    expect(late.status).toBe(400);
    expect((await get(owner.token, id)).body.item.connectedForMe).toBe(false);
    const rows = await t.db.selectFrom('connected_accounts').select('id').where('connection_id', '=', id).execute();
    expect(rows).toEqual([]);
  });

  it('disconnects a per-member API-key account too', async () => {
    const owner = await createOrganization(t);
    const id = (await create(owner.token, { name: 'Keys', url: 'https://k.example', authType: 'apikey', credentialMode: 'per_member' })).body.item.id;
    await t.http.put(`/v1/mcp-connections/${id}/my-credential`).set(...bearer(owner.token)).send({ apiKey: 'k-123' });
    expect((await t.http.post(`/v1/mcp-connections/${id}/disconnect-my-account`).set(...bearer(owner.token))).status).toBe(200);
    expect((await get(owner.token, id)).body.item.connectedForMe).toBe(false);
  });
});

describe('secrets at rest', () => {
  it('stores API keys, client secrets and tokens only encrypted', async () => {
    const owner = await createOrganization(t);
    await create(owner.token, { name: 'Docs', url: 'https://d.example', authType: 'apikey', credentialMode: 'shared', apiKey: SHARED_KEY });
    const keyed = (await create(owner.token, { name: 'Keys', url: 'https://k.example', authType: 'apikey', credentialMode: 'per_member' })).body.item.id;
    await t.http.put(`/v1/mcp-connections/${keyed}/my-credential`).set(...bearer(owner.token)).send({ apiKey: 'member-own-key-7a6b5c' });
    const id = await perMemberOAuth(owner);
    await connectOAuth(owner.token, id);
    const verifiers = auth.tokenRequests.flatMap((r) => (r.params.code_verifier ? [r.params.code_verifier] : []));
    const needles = [SHARED_KEY, 'member-own-key-7a6b5c', CLIENT_SECRET, ...auth.issuedSecrets, ...verifiers];
    expect(await findPlainText(t.db, needles)).toEqual([]);
  });
});
