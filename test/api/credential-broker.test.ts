import { newId } from '../../src/lib/ids';
import * as oauth from 'openid-client';
import { LOCAL_FAKES, TEST_SECRET_KEY } from '../support/app';
import { addMember, asApiKey, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import type { ManualClock } from '../support/clock';
import { discover, startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { delegate, exchange, workerWithCeiling, type TestWorker } from '../support/workers-oauth';
import { McpAuthServer, MCP_SCOPES } from '../fakes/mcp-oauth-provider';
import { SecretBox } from '../../src/lib/crypto';

/**
 * The credential broker (docs/workers-and-usage.md#the-credential-broker): a worker acting for a
 * member (a token it exchanged with openid-client, carrying `act`) borrows the member's current
 * access token of an MCP connection, refreshed by the service against a real authorization server
 * (oidc-provider, test/fakes/mcp-oauth-provider.ts); never a refresh token. Each loan is audited
 * and listed to the member; sessions, API keys and undelegated tokens are refused; revoking the
 * delegation, removing the member, stopping the worker or narrowing the creator's role cut the
 * exchanged token at the broker on its next request.
 */
const CLIENT = 'mcp-public';
let t: OAuthTestApp;
let as: McpAuthServer;
let owner: OrgOwner;
let connectionId: string;
const box = new SecretBox(TEST_SECRET_KEY);
const clock = () => t.clock as ManualClock;

beforeAll(async () => {
  t = await startOAuthApp({ env: LOCAL_FAKES });
  as = await McpAuthServer.start({ clients: [{ clientId: CLIENT, redirectUris: [`${t.base}/v1/mcp-connections/oauth/callback`] }] });
  owner = await createOrganization(t);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const res = await t.http
    .post('/v1/mcp-connections')
    .set(...bearer(owner.token))
    .send({ name: 'Tracker', url: 'https://mcp.tracker.example/mcp', authType: 'oauth', credentialMode: 'per_member', oauthClient: { authorizationUrl: as.authorizationEndpoint, tokenUrl: as.tokenEndpoint, issuer: as.issuer, clientId: CLIENT, scopes: MCP_SCOPES }, access: { orgWide: true } });
  expect(res.status).toBe(201);
  connectionId = res.body.item.id;
});
afterAll(async () => {
  await t?.close();
  await as?.stop();
});

/** The member connects their own account: connect/start, oidc-provider's login, our callback. */
async function connect(member: OrgMember, id = connectionId): Promise<void> {
  const start = await t.http.post(`/v1/mcp-connections/${id}/connect/start`).set(...bearer(member.token));
  expect(start.status).toBe(200);
  const back = await as.login(start.body.authorizeUrl);
  expect((await t.http.get(`${back.pathname}${back.search}`)).status).toBe(200);
}

async function stored(memberId: string): Promise<{ accessToken: string; refreshToken: string }> {
  const row = await t.db.selectFrom('connected_accounts').select('secrets_sealed').where('member_id', '=', memberId).where('connection_id', '=', connectionId).executeTakeFirstOrThrow();
  return JSON.parse(box.decrypt(row.secrets_sealed));
}

interface Setup {
  alice: OrgMember;
  creator: OrgMember;
  worker: TestWorker;
  delegation: { id: string; subjectToken: string };
  token: string;
}

/** Alice (a plain member) connected, a worker of an admin with a ceiling, her delegation to it and the exchanged token. */
async function setup(scopes = ['mcpConnections.use', 'members.read'], expiresIn?: number): Promise<Setup> {
  const alice = await addMember(t, owner.organizationId, 'member');
  await connect(alice);
  const creator = await addMember(t, owner.organizationId, 'admin');
  const worker = await workerWithCeiling(t, creator.token, ['mcpConnections.use', 'members.read'], 'Research agent');
  const delegation = await delegate(t, alice.token, worker.id, scopes, expiresIn);
  const token = (await exchange(t, worker, delegation.subjectToken)).access_token;
  return { alice, creator, worker, delegation, token };
}

const borrow = (credential: [string, string], id = connectionId) => t.http.post(`/v1/mcp-connections/${id}/access-token`).set(...credential);
const uses = (token: string, query = '') => t.http.get(`/v1/me/mcp-connections/${connectionId}/uses${query}`).set(...bearer(token));

describe('POST /v1/mcp-connections/{id}/access-token', () => {
  it("lends the member's current access token to the worker acting for them, audited and listed to the member", async () => {
    const { alice, worker, token } = await setup();
    const refreshes = as.grants.filter((g) => g.grantType === 'refresh_token').length;
    const res = await borrow(bearer(token));
    expect(res.status).toBe(200);
    const secrets = await stored(alice.memberId);
    expect(res.body).toEqual({ accessToken: secrets.accessToken, expiresAt: expect.any(String), tokenType: 'Bearer' });
    expect(new Date(res.body.expiresAt).getTime()).toBeGreaterThan(t.clock.now().getTime());
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).not.toContain(secrets.refreshToken);
    expect(as.grants.filter((g) => g.grantType === 'refresh_token').length).toBe(refreshes);

    const log = await t.http.get(`/v1/audit-logs?targetId=${connectionId}&action=credential.issued`).set(...bearer(owner.token));
    const entry = log.body.items.find((e: { actor: { memberId: string } }) => e.actor.memberId === alice.memberId);
    expect(entry).toMatchObject({ action: 'credential.issued', target: { type: 'mcp_connection', id: connectionId }, actor: { type: 'member', memberId: alice.memberId, clientId: worker.id, act: { sub: worker.id } } });
    expect(JSON.stringify(log.body)).not.toContain(secrets.accessToken);
    expect(JSON.stringify(log.body)).not.toContain(secrets.refreshToken);
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true });

    const listed = await uses(alice.token);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ items: [{ workerId: worker.id, workerName: 'Research agent', clientId: worker.id, at: t.clock.now().toISOString() }], nextCursor: null });
    // Only the caller's own uses: the owner sees none of Alice's.
    expect((await uses(owner.token)).body).toEqual({ items: [], nextCursor: null });
    // Alice's own export carries the loan (never the credential); the owner's does not.
    const exported = await t.http.get('/v1/me/export').set(...bearer(alice.token)).buffer(true);
    expect(JSON.parse(exported.text).connectionUses).toEqual([{ id: expect.any(String), organizationId: owner.organizationId, connectionId, workerId: worker.id, workerName: 'Research agent', clientId: worker.id, usedAt: t.clock.now().toISOString() }]);
    expect(exported.text).not.toContain(secrets.accessToken);
    expect(JSON.parse((await t.http.get('/v1/me/export').set(...bearer(owner.token)).buffer(true)).text).connectionUses).toEqual([]);
  });

  it('refreshes an expired token at the authorization server first (rotation kept), never lending the refresh token', async () => {
    const { alice, token } = await setup();
    const before = await stored(alice.memberId);
    // The stored token's recorded expiry passes (the service's clock also signs the worker's token, so it stays put).
    await t.db.updateTable('connected_accounts').set({ access_expires_at: new Date(t.clock.now().getTime() - 60_000) }).where('member_id', '=', alice.memberId).execute();
    const refreshes = as.grants.filter((g) => g.grantType === 'refresh_token').length;
    const res = await borrow(bearer(token));
    expect(res.status).toBe(200);
    expect(as.grants.filter((g) => g.grantType === 'refresh_token').length).toBe(refreshes + 1);
    expect(as.grants.at(-1)).toEqual({ grantType: 'refresh_token', clientId: CLIENT });
    const after = await stored(alice.memberId);
    expect(res.body.accessToken).toBe(after.accessToken);
    expect(res.body.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).toBe(as.issuedRefreshTokens.at(-1));
    expect(await as.refreshTokenIsActive(before.refreshToken)).toBe(false);
    expect(new Date(res.body.expiresAt).getTime()).toBeGreaterThan(t.clock.now().getTime());
    expect(res.text).not.toContain(after.refreshToken);
    // Current again: the next loan calls nobody.
    expect((await borrow(bearer(token))).body.accessToken).toBe(after.accessToken);
    expect(as.grants.filter((g) => g.grantType === 'refresh_token').length).toBe(refreshes + 1);
  });

  it('lends a shared API key; a member who has not connected is 409, a connection they may not use 404', async () => {
    const { creator, worker, alice } = await setup();
    const shared = await t.http.post('/v1/mcp-connections').set(...bearer(owner.token)).send({ name: 'Docs', url: 'https://mcp.docs.example/mcp', authType: 'apikey', credentialMode: 'shared', apiKey: 'shared-docs-key-1234', access: { orgWide: true } });
    const hidden = await t.http.post('/v1/mcp-connections').set(...bearer(owner.token)).send({ name: 'Hidden', url: 'https://mcp.hidden.example/mcp', authType: 'apikey', credentialMode: 'shared', apiKey: 'hidden-key-1234', access: { memberIds: [creator.memberId] } });
    const token = (await exchange(t, worker, (await delegate(t, alice.token, worker.id, ['mcpConnections.use'])).subjectToken)).access_token;
    const lent = await borrow(bearer(token), shared.body.item.id);
    expect(lent.status).toBe(200);
    expect(lent.body).toEqual({ accessToken: 'shared-docs-key-1234', expiresAt: null, tokenType: 'api_key' });
    const notGranted = await borrow(bearer(token), hidden.body.item.id);
    expect(notGranted.status).toBe(404);
    expect(notGranted.body.error).toBe('connection_not_found');
    const bob = await addMember(t, owner.organizationId, 'member');
    const bobs = (await exchange(t, worker, (await delegate(t, bob.token, worker.id, ['mcpConnections.use'])).subjectToken)).access_token;
    const unconnected = await borrow(bearer(bobs));
    expect(unconnected.status).toBe(409);
    expect(unconnected.body.error).toBe('needs_connection');
  });

  it('refuses a session, an API key and tokens without act (403 delegation_required), and a token without mcpConnections.use', async () => {
    const { alice, worker } = await setup();
    for (const credential of [bearer(alice.token), bearer(owner.token)]) {
      const res = await borrow(credential);
      expect(res.status).toBe(403);
      expect(res.body.reason).toBe('delegation_required');
    }
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' });
    expect((await borrow(asApiKey(key.body.key))).body.reason).toBe('delegation_required');
    // The worker's own client-credentials token (sub = the worker) acts for nobody.
    const own = await oauth.clientCredentialsGrant(await discover(t, worker.id, worker.hostToken));
    const ownRes = await borrow(bearer(own.access_token));
    expect(ownRes.status).toBe(403);
    expect(ownRes.body.reason).toBe('delegation_required');
    const narrow = (await exchange(t, worker, (await delegate(t, alice.token, worker.id, ['members.read'])).subjectToken)).access_token;
    const withoutUse = await borrow(bearer(narrow));
    expect(withoutUse.status).toBe(403);
    expect(withoutUse.body.message).toContain('mcpConnections.use');
    expect((await uses(alice.token)).body.items).toEqual([]);
  });
});

describe('cut-offs at the broker, on the next request', () => {
  it('revoking the delegation', async () => {
    const { alice, delegation, token } = await setup();
    expect((await borrow(bearer(token))).status).toBe(200);
    expect((await t.http.delete(`/v1/me/authorizations/${delegation.id}`).set(...bearer(alice.token))).status).toBe(204);
    const res = await borrow(bearer(token));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('removing the member', async () => {
    const { alice, token } = await setup();
    expect((await t.http.delete(`/v1/members/${alice.memberId}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await borrow(bearer(token))).status).toBe(401);
  });

  it('stopping the worker', async () => {
    const { creator, worker, token } = await setup();
    expect((await t.http.post(`/v1/workers/${worker.id}/stop`).set(...bearer(creator.token))).status).toBe(200);
    expect((await borrow(bearer(token))).status).toBe(401);
  });

  it("narrowing the creator's role to one without mcpConnections.use (403)", async () => {
    const { creator, token } = await setup();
    expect((await borrow(bearer(token))).status).toBe(200);
    const role = await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: `reader-${Date.now()}`, name: 'Reader', permissions: ['members.read'] });
    expect(role.status).toBe(201);
    expect((await t.http.post(`/v1/members/${creator.memberId}/role`).set(...bearer(owner.token)).send({ role: role.body.item.key })).status).toBe(200);
    const res = await borrow(bearer(token));
    expect(res.status).toBe(403);
    expect(res.body.message).toContain('mcpConnections.use');
    expect((await t.http.get('/v1/members').set(...bearer(token))).status).toBe(200);
  });
});

describe('GET /v1/me/mcp-connections/{id}/uses', () => {
  it('pages newest first with a cursor; session only; another organization gets 404', async () => {
    const { alice, worker, token } = await setup();
    const times: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock().advance(1000);
      expect((await borrow(bearer(token))).status).toBe(200);
      times.push(t.clock.now().toISOString());
    }
    const first = await uses(alice.token, '?limit=2');
    expect(first.body.items.map((u: { at: string }) => u.at)).toEqual([times[2], times[1]]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await uses(alice.token, `?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toEqual({ items: [{ workerId: worker.id, workerName: 'Research agent', clientId: worker.id, at: times[0] }], nextCursor: null });
    expect((await uses(token)).status).toBe(401);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' });
    expect((await t.http.get(`/v1/me/mcp-connections/${connectionId}/uses`).set(...asApiKey(key.body.key))).status).toBe(401);
    const other = await createOrganization(t, 'Other');
    const foreign = await uses(other.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('connection_not_found');
    // The member's export reads a long history in keyset pages of 1,000: every use once, oldest first.
    const at = t.clock.now().getTime();
    await t.db.insertInto('mcp_connection_uses').values(Array.from({ length: 1500 }, (_, i) => ({
      id: newId('mcpConnectionUse'), organization_id: owner.organizationId, connection_id: connectionId, member_id: alice.memberId,
      worker_id: worker.id, worker_name: 'Research agent', client_id: worker.id, used_at: new Date(at - 1_000_000 + Math.floor(i / 3) * 1000),
    }))).execute();
    const exported = JSON.parse((await t.http.get('/v1/me/export').set(...bearer(alice.token)).buffer(true)).text).connectionUses as { id: string; usedAt: string }[];
    expect(exported).toHaveLength(1503);
    expect(new Set(exported.map((u) => u.id)).size).toBe(1503);
    expect(exported.map((u) => u.usedAt)).toEqual(exported.map((u) => u.usedAt).sort());
  });
});
