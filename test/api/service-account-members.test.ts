import { createTestApp, type TestApp } from '../support/app';
import { asApiKey, bearer, createMarketplace, createOrganization, type OrgOwner } from '../support/factories';

/**
 * A service account is a member (docs/service-accounts.md#what-it-is): GET /v1/members lists it
 * with `type` and `serviceAccountId` and no user (on the page the session query reads and on the
 * pages after it), and role changes, teams, resource grants and removal take it as any member;
 * another organization's cannot be reached.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function newAccount(owner: OrgOwner, role = 'member') {
  const res = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'Deploy bot', role });
  if (res.status !== 201) throw new Error(`create service account: ${res.status} ${JSON.stringify(res.body)}`);
  const key = await t.http.post(`/v1/service-accounts/${res.body.item.id}/api-keys`).set(...bearer(owner.token)).send({ name: 'key' });
  if (key.status !== 201) throw new Error(`create key: ${key.status} ${JSON.stringify(key.body)}`);
  return { ...(res.body.item as { id: string; memberId: string }), key: key.body.key as string };
}


describe('a service account as a member', () => {
  it('is listed by GET /v1/members with its type and account, no user, on every page', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner);
    const expected = {
      id: account.memberId,
      organizationId: owner.organizationId,
      type: 'service_account',
      userId: null,
      serviceAccountId: account.id,
      role: 'member',
      status: 'active',
      createdAt: t.clock.now().toISOString(),
      user: null,
      serviceAccount: { id: account.id, name: 'Deploy bot', disabled: false },
      directoryUserId: null,
    };
    // The first page, read by the session query itself.
    const first = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(first.status).toBe(200);
    const byId = (items: { id: string }[]): Record<string, Record<string, unknown>> => Object.fromEntries(items.map((m) => [m.id, m]));
    expect(byId(first.body.items)[account.memberId]).toEqual(expected);
    expect(byId(first.body.items)[owner.memberId]).toMatchObject({ type: 'user', userId: owner.userId, serviceAccountId: null, serviceAccount: null, user: { id: owner.userId, email: owner.email } });
    // Pages after a cursor are read by the members store; an API key reads them there too.
    const one = await t.http.get('/v1/members').query({ limit: 1 }).set(...bearer(owner.token));
    const rest = await t.http.get('/v1/members').query({ limit: 1, cursor: one.body.nextCursor }).set(...bearer(owner.token));
    expect([...one.body.items, ...rest.body.items].map((m: { id: string }) => m.id).sort()).toEqual([owner.memberId, account.memberId].sort());
    expect(byId([...one.body.items, ...rest.body.items])[account.memberId]).toEqual(expected);
    const viaKey = await t.http.get('/v1/members').set(...asApiKey(account.key));
    expect(byId(viaKey.body.items)[account.memberId]).toEqual(expected);

    // Disabled shows in the listing.
    await t.http.patch(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token)).send({ disabled: true });
    const after = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(byId(after.body.items)[account.memberId]!.serviceAccount).toEqual({ id: account.id, name: 'Deploy bot', disabled: true });
  });

  it('takes role changes through the member routes, effective on its next request', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner, 'member');
    expect((await t.http.post('/v1/teams').set(...asApiKey(account.key)).send({ name: 'Not yet' })).status).toBe(403);
    const res = await t.http.post(`/v1/members/${account.memberId}/role`).set(...bearer(owner.token)).send({ role: 'admin' });
    expect(res.status).toBe(200);
    expect(res.body.item).toMatchObject({ id: account.memberId, type: 'service_account', serviceAccountId: account.id, role: 'admin', user: null });
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).body.item.role).toBe('admin');
    expect((await t.http.post('/v1/teams').set(...asApiKey(account.key)).send({ name: 'Now' })).status).toBe(201);
    // Never the owner.
    const transfer = await t.http.post(`/v1/members/${account.memberId}/transfer-ownership`).set(...bearer(owner.token));
    expect(transfer.status).toBe(409);
    expect(transfer.body.error).toBe('service_account_cannot_own');
  });

  it('joins teams, listed there as a service account', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner);
    const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Bots', memberIds: [account.memberId] });
    expect(team.status).toBe(201);
    const members = await t.http.get(`/v1/teams/${team.body.item.id}/members`).set(...bearer(owner.token));
    expect(members.status).toBe(200);
    expect(members.body.items).toEqual([expect.objectContaining({ id: account.memberId, type: 'service_account', serviceAccountId: account.id, user: null })]);
    const other = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'More bots' });
    expect((await t.http.put(`/v1/teams/${other.body.item.id}/members/${account.memberId}`).set(...bearer(owner.token))).status).toBe(200);
    expect((await t.http.get(`/v1/teams/${other.body.item.id}/members`).set(...bearer(owner.token))).body.items[0]).toMatchObject({ type: 'service_account' });
  });

  it('takes resource grants: a viewer grant opens a marketplace to its key', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner);
    const marketplace = await createMarketplace(t, owner.token);
    expect((await t.http.get(`/v1/marketplaces/${marketplace.id}`).set(...asApiKey(account.key))).status).not.toBe(200);
    const grant = await t.http.post(`/v1/marketplaces/${marketplace.id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: account.memberId, role: 'viewer' });
    expect(grant.status).toBe(201);
    expect((await t.http.get(`/v1/marketplaces/${marketplace.id}`).set(...asApiKey(account.key))).status).toBe(200);
  });

  it('is deleted with its member: removing the member ends the account and its keys', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner);
    expect((await t.http.delete(`/v1/members/${account.memberId}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/teams').set(...asApiKey(account.key))).status).toBe(401);
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).status).toBe(404);
    const listed = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(listed.body.items.map((m: { id: string }) => m.id)).toEqual([owner.memberId]);
  });

  it("keeps another organization's service-account member out of reach", async () => {
    const a = await createOrganization(t, 'A');
    const b = await createOrganization(t, 'B');
    const account = await newAccount(a);
    expect((await t.http.get('/v1/members').set(...bearer(b.token))).body.items.map((m: { id: string }) => m.id)).toEqual([b.memberId]);
    const calls = [
      t.http.post(`/v1/members/${account.memberId}/role`).send({ role: 'admin' }),
      t.http.delete(`/v1/members/${account.memberId}`),
    ];
    for (const call of calls) expect((await call.set(...bearer(b.token))).status).toBe(404);
    const team = await t.http.post('/v1/teams').set(...bearer(b.token)).send({ name: 'Theirs' });
    expect((await t.http.put(`/v1/teams/${team.body.item.id}/members/${account.memberId}`).set(...bearer(b.token))).status).toBe(404);
    const marketplace = await createMarketplace(t, b.token);
    expect((await t.http.post(`/v1/marketplaces/${marketplace.id}/access`).set(...bearer(b.token)).send({ orgMembershipId: account.memberId, role: 'viewer' })).status).toBe(404);
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(a.token))).body.item).toMatchObject({ role: 'member', disabled: false });
  });
});
