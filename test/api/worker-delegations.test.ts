import { addMember, asApiKey, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import { startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { delegate, exchange, exchangeRefusal, workerWithCeiling, type TestWorker } from '../support/workers-oauth';

/**
 * Delegations from a member to a worker (docs/workers-and-usage.md#delegations-and-token-exchange):
 * made with a session, listed and revoked with the member's authorizations, and every token
 * exchanged from one cut on its next request when the delegation is revoked, the member removed,
 * the worker stopped or its creator's role narrowed.
 */
let t: OAuthTestApp;
let owner: OrgOwner;
beforeAll(async () => {
  t = await startOAuthApp();
  owner = await createOrganization(t);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
});
afterAll(() => t.close());

const members = (token: string) => t.http.get('/v1/members').set(...bearer(token));

async function setup(creatorRole: 'admin' | 'member' = 'admin'): Promise<{ alice: OrgMember; creator: OrgMember; worker: TestWorker; delegation: { id: string; subjectToken: string }; token: string }> {
  const alice = await addMember(t, owner.organizationId, 'admin');
  const creator = await addMember(t, owner.organizationId, creatorRole);
  const worker = await workerWithCeiling(t, creator.token, creatorRole === 'admin' ? ['members.read', 'teams.manage'] : ['members.read']);
  const delegation = await delegate(t, alice.token, worker.id, ['members.read', 'teams.manage']);
  const tokens = await exchange(t, worker, delegation.subjectToken);
  expect((await members(tokens.access_token)).status).toBe(200);
  return { alice, creator, worker, delegation, token: tokens.access_token };
}

describe('POST /v1/workers/{id}/delegations', () => {
  it('answers the authorization and its subject token once; it is listed with the member authorizations and audited', async () => {
    const alice = await addMember(t, owner.organizationId, 'admin');
    const worker = await workerWithCeiling(t, owner.token, ['members.read'], 'Research agent');
    const res = await t.http.post(`/v1/workers/${worker.id}/delegations`).set(...bearer(alice.token)).send({ scopes: ['teams.read', 'members.read'], expiresIn: 600 });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(/^oag_/),
        client: { id: worker.id, name: 'Research agent', type: 'worker' },
        organizationId: owner.organizationId,
        memberId: alice.memberId,
        scopes: ['members.read', 'teams.read'],
        resource: `${t.base}/v1`,
        createdAt: expect.any(String),
        lastUsedAt: expect.any(String),
        expiresAt: new Date(t.clock.now().getTime() + 600_000).toISOString(),
      },
      subjectToken: expect.any(String),
    });
    const mine = await t.http.get('/v1/me/authorizations').set(...bearer(alice.token));
    expect(mine.body.items).toEqual([res.body.item]);
    const org = await t.http.get('/v1/oauth-authorizations').set(...bearer(owner.token));
    expect(org.body.items.map((a: { id: string }) => a.id)).toContain(res.body.item.id);
    const log = await t.http.get(`/v1/audit-logs?targetId=${res.body.item.id}`).set(...bearer(owner.token));
    expect(log.body.items[0]).toMatchObject({ action: 'oauth_authorization.created', actor: { memberId: alice.memberId } });
    expect(JSON.stringify(log.body.items[0])).not.toContain(res.body.subjectToken);
    const row = await t.db.selectFrom('oauth_authorizations').select('subject_token_hash').where('id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(row.subject_token_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a new delegation to the same worker replaces the last', async () => {
    const alice = await addMember(t, owner.organizationId, 'admin');
    const worker = await workerWithCeiling(t, owner.token, ['members.read']);
    const first = await delegate(t, alice.token, worker.id, ['members.read']);
    const second = await delegate(t, alice.token, worker.id, ['members.read']);
    expect(await exchangeRefusal(t, worker, first.subjectToken)).toMatchObject({ error: 'invalid_grant' });
    expect((await exchange(t, worker, second.subjectToken)).scope).toBe('members.read');
    const mine = await t.http.get('/v1/me/authorizations').set(...bearer(alice.token));
    expect(mine.body.items.map((a: { id: string }) => a.id)).toEqual([second.id]);
  });

  it('refuses bad input, keys the member lacks, stopped and foreign workers, and non-session credentials', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const worker = await workerWithCeiling(t, owner.token, ['members.read']);
    const post = (token: string, body: unknown, id = worker.id) => t.http.post(`/v1/workers/${id}/delegations`).set(...bearer(token)).send(body as object);
    const empty = await post(member.token, { scopes: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.details[0].path).toEqual(['body', 'scopes']);
    const short = await post(member.token, { scopes: ['members.read'], expiresIn: 59 });
    expect(short.status).toBe(400);
    expect(short.body.details[0].path).toEqual(['body', 'expiresIn']);
    const unknown = await post(member.token, { scopes: ['members.read', 'nothing.here'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details[0].path).toEqual(['body', 'scopes', '1']);
    const notHeld = await post(member.token, { scopes: ['teams.manage'] });
    expect(notHeld.status).toBe(403);
    expect(notHeld.body.reason).toBe('permission_not_held');
    const other = await createOrganization(t, 'Other');
    expect((await post(other.token, { scopes: ['members.read'] })).status).toBe(404);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' });
    expect((await t.http.get('/v1/members').set(...asApiKey(key.body.key))).status).toBe(200);
    expect((await t.http.post(`/v1/workers/${worker.id}/delegations`).set(...asApiKey(key.body.key)).send({ scopes: ['members.read'] })).status).toBe(401);
    expect((await t.http.post(`/v1/workers/${worker.id}/stop`).set(...bearer(owner.token))).status).toBe(200);
    const stopped = await post(member.token, { scopes: ['members.read'] });
    expect(stopped.status).toBe(409);
    expect(stopped.body.error).toBe('worker_stopped');
  });
});

describe('cut-offs of exchanged tokens, on their next request', () => {
  it('revoking the delegation (the member, from their authorizations)', async () => {
    const { alice, worker, delegation, token } = await setup();
    expect((await t.http.delete(`/v1/me/authorizations/${delegation.id}`).set(...bearer(alice.token))).status).toBe(204);
    const res = await members(token);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(await exchangeRefusal(t, worker, delegation.subjectToken)).toMatchObject({ error: 'invalid_grant' });
  });

  it('removing the member', async () => {
    const { alice, worker, delegation, token } = await setup();
    expect((await t.http.delete(`/v1/members/${alice.memberId}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await members(token)).status).toBe(401);
    expect(await exchangeRefusal(t, worker, delegation.subjectToken)).toMatchObject({ error: 'invalid_grant' });
  });

  it('stopping the worker (and starting it again restores it), deleting it', async () => {
    const { creator, worker, token } = await setup();
    expect((await t.http.post(`/v1/workers/${worker.id}/stop`).set(...bearer(creator.token))).status).toBe(200);
    expect((await members(token)).status).toBe(401);
    expect((await t.http.post(`/v1/workers/${worker.id}/start`).set(...bearer(creator.token))).status).toBe(200);
    expect((await members(token)).status).toBe(200);
    expect((await t.http.delete(`/v1/workers/${worker.id}`).set(...bearer(creator.token))).status).toBe(204);
    expect((await members(token)).status).toBe(401);
  });

  it("narrowing the creator's role, or the worker's ceiling", async () => {
    const { creator, worker, token } = await setup();
    expect((await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'before' })).status).toBe(201);
    expect((await t.http.post(`/v1/members/${creator.memberId}/role`).set(...bearer(owner.token)).send({ role: 'member' })).status).toBe(200);
    const refused = await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'after' });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('teams.manage');
    expect((await members(token)).status).toBe(200);
    expect((await t.http.put(`/v1/workers/${worker.id}/ceiling`).set(...bearer(owner.token)).send({ scopes: [] })).status).toBe(200);
    expect((await members(token)).status).toBe(403);
  });

  it("narrowing the member's own role", async () => {
    const { alice, token } = await setup();
    expect((await t.http.post(`/v1/members/${alice.memberId}/role`).set(...bearer(owner.token)).send({ role: 'member' })).status).toBe(200);
    expect((await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'after' })).status).toBe(403);
    expect((await members(token)).status).toBe(200);
  });
});
