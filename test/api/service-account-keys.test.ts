import { createTestApp, type TestApp } from '../support/app';
import { addMember, asApiKey, bearer, createOrganization, type OrgOwner } from '../support/factories';
import type { ManualClock } from '../support/clock';

/**
 * A service account's API keys (docs/service-accounts.md#credentials): the organization's keys,
 * acting as the account's member (a Principal with no user), surviving whoever made them, 401 on
 * the next request once the account is disabled or deleted, audited as the service account, shown
 * with their owner in GET /v1/api-keys; another organization's account is out of reach.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function newAccount(token: string, body: Record<string, unknown> = {}) {
  const res = await t.http.post('/v1/service-accounts').set(...bearer(token)).send({ name: 'CI deploy', role: 'admin', ...body });
  if (res.status !== 201) throw new Error(`create service account: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.item as { id: string; memberId: string };
}

async function newKey(token: string, serviceAccountId: string, body: Record<string, unknown> = {}) {
  const res = await t.http.post(`/v1/service-accounts/${serviceAccountId}/api-keys`).set(...bearer(token)).send({ name: 'deploy key', ...body });
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { item: { id: string; memberId: string; owner: unknown }; key: string };
}


describe('POST /v1/service-accounts/{id}/api-keys', () => {
  it("makes the organization's key: it acts as the service account, with no user, audited as the account", async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner.token);
    const res = await t.http.post(`/v1/service-accounts/${account.id}/api-keys`).set(...bearer(owner.token)).send({ name: 'deploy key' });
    expect(res.status).toBe(201);
    expect(res.body.item).toMatchObject({ memberId: account.memberId, owner: { type: 'service_account', serviceAccountId: account.id }, permissions: null, lastUsedAt: null });
    expect(res.body.key).toMatch(/^cpk_/);
    const created = await t.db.selectFrom('audit_logs').select(['action', 'actor_type', 'actor_member_id', 'changes']).where('target_id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(created).toMatchObject({ action: 'api_key.created', actor_type: 'member', actor_member_id: owner.memberId });
    expect(JSON.stringify(created.changes)).not.toContain(res.body.key);

    // It acts: a team made through it is audited with the service account as the actor.
    const team = await t.http.post('/v1/teams').set(...asApiKey(res.body.key)).send({ name: 'Robots' });
    expect(team.status).toBe(201);
    const entries = await t.http.get('/v1/audit-logs').query({ targetId: team.body.item.id }).set(...bearer(owner.token));
    expect(entries.body.items[0].actor).toEqual({ type: 'service_account', id: account.id, memberId: account.memberId, apiKeyId: res.body.item.id });
    const verified = await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token));
    expect(verified.body).toMatchObject({ ok: true, firstBrokenId: null });
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).body.item.lastUsedAt).toBe(t.clock.now().toISOString());

    // A person's routes answer as for any key without a person: 401, never a 500.
    expect((await t.http.get('/v1/me').set(...asApiKey(res.body.key))).status).toBe(401);
    expect((await t.http.get('/v1/me/invitations').set(...asApiKey(res.body.key))).status).toBe(401);
    expect((await t.http.post('/v1/org').set(...asApiKey(res.body.key)).send({ name: 'Mine' })).status).toBe(401);
    // Credentials are made with a session only.
    expect((await t.http.post('/v1/api-keys').set(...asApiKey(res.body.key)).send({ name: 'x' })).status).toBe(401);
    expect((await t.http.post(`/v1/service-accounts/${account.id}/api-keys`).set(...asApiKey(res.body.key)).send({ name: 'x' })).status).toBe(401);
  });

  it('narrows the key by its scope, and refuses bad input with the field named', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner.token);
    const { key } = await newKey(owner.token, account.id, { permissions: ['teams.read'] });
    expect((await t.http.get('/v1/teams').set(...asApiKey(key))).status).toBe(200);
    const refused = await t.http.post('/v1/teams').set(...asApiKey(key)).send({ name: 'Nope' });
    expect(refused.status).toBe(403);
    for (const [body, path] of [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'k', permissions: ['teams.fly'] }, 'permissions'],
      [{ name: 'k', expiresAt: '2000-01-01T00:00:00.000Z' }, 'expiresAt'],
      [{ name: 'k', extra: 1 }, 'extra'],
    ] as const) {
      const bad = await t.http.post(`/v1/service-accounts/${account.id}/api-keys`).set(...bearer(owner.token)).send(body);
      expect({ body, status: bad.status, error: bad.body.error }).toEqual({ body, status: 400, error: 'invalid_request' });
      expect(bad.body.details[0].path.join('.')).toContain(path);
    }
  });

  it('outlives its creator: removing the member who made the account and its key changes nothing', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const account = await newAccount(admin.token, { role: 'member' });
    const { item, key } = await newKey(admin.token, account.id);
    const ownKey = await t.http.post('/v1/api-keys').set(...bearer(admin.token)).send({ name: 'mine' });
    expect(ownKey.status).toBe(201);

    expect((await t.http.delete(`/v1/members/${admin.memberId}`).set(...bearer(owner.token))).status).toBe(204);

    // The person's own key died with them; the service account's did not.
    expect((await t.http.get('/v1/teams').set(...asApiKey(ownKey.body.key))).status).toBe(401);
    expect((await t.http.get('/v1/teams').set(...asApiKey(key))).status).toBe(200);
    const listed = await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token));
    expect(listed.body.item).toMatchObject({ disabled: false, createdBy: { memberId: admin.memberId } });
    const keys = await t.http.get('/v1/api-keys').set(...bearer(owner.token));
    expect(keys.body.items).toEqual([expect.objectContaining({ id: item.id, owner: { type: 'service_account', serviceAccountId: account.id } })]);
  });

  it('answers 401 on the next request once the account is disabled, again once enabled, and 401 for good once deleted', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner.token, { role: 'member' });
    const { item, key } = await newKey(owner.token, account.id);
    expect((await t.http.get('/v1/teams').set(...asApiKey(key))).status).toBe(200);

    expect((await t.http.patch(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token)).send({ disabled: true })).status).toBe(200);
    const refused = await t.http.get('/v1/teams').set(...asApiKey(key));
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('unauthorized');

    expect((await t.http.patch(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token)).send({ disabled: false })).status).toBe(200);
    expect((await t.http.get('/v1/teams').set(...asApiKey(key))).status).toBe(200);

    expect((await t.http.delete(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/teams').set(...asApiKey(key))).status).toBe(401);
    // Its keys were revoked with it.
    const revoked = await t.db.selectFrom('api_keys').select('revoked_at').where('id', '=', item.id).executeTakeFirstOrThrow();
    expect(revoked.revoked_at).not.toBeNull();
    expect((await t.http.get('/v1/api-keys').set(...bearer(owner.token))).body.items).toEqual([]);
  });

  it('needs a recent sign-in and every permission the account holds', async () => {
    const owner = await createOrganization(t);
    const strong = await newAccount(owner.token, { role: 'admin' });
    await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: 'robot-keeper', name: 'Robot keeper', permissions: ['serviceAccounts.manage', 'teams.read'] });
    const keeper = await addMember(t, owner.organizationId, 'robot-keeper');
    const denied = await t.http.post(`/v1/service-accounts/${strong.id}/api-keys`).set(...bearer(keeper.token)).send({ name: 'k' });
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('member_permissions_not_held');
    const plain = await addMember(t, owner.organizationId, 'member');
    expect((await t.http.post(`/v1/service-accounts/${strong.id}/api-keys`).set(...bearer(plain.token)).send({ name: 'k' })).status).toBe(403);

    (t.clock as ManualClock).advance(24 * 3600_000);
    const stale = await t.http.post(`/v1/service-accounts/${strong.id}/api-keys`).set(...bearer(owner.token)).send({ name: 'k' });
    expect(stale.status).toBe(403);
    expect(stale.body.reason).toBe('fresh_session_required');
  });

  it("keeps another organization's service account invisible and unchangeable", async () => {
    const a: OrgOwner = await createOrganization(t, 'A');
    const b: OrgOwner = await createOrganization(t, 'B');
    const account = await newAccount(a.token, { role: 'member' });
    const { item, key } = await newKey(a.token, account.id);
    const res = await t.http.post(`/v1/service-accounts/${account.id}/api-keys`).set(...bearer(b.token)).send({ name: 'theirs' });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('service_account_not_found');
    expect((await t.http.get('/v1/api-keys').set(...bearer(b.token))).body.items).toEqual([]);
    expect((await t.http.delete(`/v1/api-keys/${item.id}`).set(...bearer(b.token))).status).toBe(404);
    // Its key reaches its own organization only.
    const teams = await t.http.get('/v1/teams').set(...asApiKey(key));
    expect(teams.status).toBe(200);
    const bTeam = await t.http.post('/v1/teams').set(...bearer(b.token)).send({ name: 'B only' });
    expect((await t.http.get(`/v1/teams/${bTeam.body.item.id}`).set(...asApiKey(key))).status).toBe(404);
  });
});
