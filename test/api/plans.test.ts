import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, signUp, type OrgOwner } from '../support/factories';
import { invitationTokenFor } from '../support/mailbox';

/**
 * Plans as data (docs/workers-and-usage.md#plans-limits-and-usage): limits checked inside the creating transaction, so parallel
 * requests at the limit reach exactly the limit; features from the plans table; PLAN_GATING=off.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const createWorker = (owner: { token: string }, name = 'W') => t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name });
const workerCount = async (organizationId: string) =>
  Number((await t.db.selectFrom('workers').select((eb) => eb.fn.countAll<string>().as('n')).where('organization_id', '=', organizationId).executeTakeFirstOrThrow()).n);
const memberCount = async (organizationId: string) =>
  Number(
    (await t.db.selectFrom('members').select((eb) => eb.fn.countAll<string>().as('n')).where('organization_id', '=', organizationId).where('removed_at', 'is', null).executeTakeFirstOrThrow()).n,
  );

async function platformAdmin(): Promise<OrgOwner> {
  const root = await createOrganization(t, 'Platform');
  await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', root.userId).execute();
  return root;
}

describe('the plans table', () => {
  it('is seeded with the three plans of the contract', async () => {
    const rows = await t.db.selectFrom('plans').select(['key', 'max_members', 'max_workers', 'max_llm_providers', 'max_service_accounts', 'features']).orderBy('rank').execute();
    expect(rows).toEqual([
      { key: 'free', max_members: 5, max_workers: 2, max_llm_providers: 1, max_service_accounts: 2, features: { analytics: false, sso: false, scim: false, auditLog: false } },
      { key: 'team', max_members: 50, max_workers: 20, max_llm_providers: 10, max_service_accounts: 20, features: { analytics: true, sso: false, scim: false, auditLog: false } },
      { key: 'enterprise', max_members: null, max_workers: null, max_llm_providers: null, max_service_accounts: null, features: { analytics: true, sso: true, scim: true, auditLog: true } },
    ]);
  });
});

describe('worker limit', () => {
  it('refuses the third worker of a free organization with 402 plan_limit_reached and writes nothing', async () => {
    const owner = await createOrganization(t, 'Free');
    expect((await createWorker(owner, 'one')).status).toBe(201);
    expect((await createWorker(owner, 'two')).status).toBe(201);
    const third = await createWorker(owner, 'three');
    expect(third.status).toBe(402);
    expect(third.body).toEqual({ error: 'plan_limit_reached', limit: 'workers', message: expect.stringContaining('2 workers') });
    expect(await workerCount(owner.organizationId)).toBe(2);
  });

  it('lets exactly the limit through when creations race', async () => {
    const owner = await createOrganization(t, 'Race');
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => createWorker(owner, `w${i}`)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 402, 402, 402, 402, 402, 402]);
    expect(await workerCount(owner.organizationId)).toBe(2);
  });

  it('follows the plan the platform admin sets; lowering it removes nothing', async () => {
    const root = await platformAdmin();
    const owner = await createOrganization(t, 'Grows');
    await createWorker(owner);
    await createWorker(owner);
    const setPlan = (plan: string) => t.http.patch(`/v1/admin/organizations/${owner.organizationId}`).set(...bearer(root.token)).send({ plan });
    expect((await setPlan('team')).status).toBe(200);
    expect((await createWorker(owner)).status).toBe(201);
    expect((await setPlan('free')).status).toBe(200);
    expect(await workerCount(owner.organizationId)).toBe(3);
    const list = await t.http.get('/v1/workers').set(...bearer(owner.token));
    expect(list.body.items).toHaveLength(3);
    expect((await createWorker(owner)).body).toMatchObject({ error: 'plan_limit_reached', limit: 'workers' });
    // Deleting brings the organization back under the limit only when it is below it.
    await t.http.delete(`/v1/workers/${list.body.items[0].id}`).set(...bearer(owner.token));
    expect((await createWorker(owner)).status).toBe(402);
    await t.http.delete(`/v1/workers/${list.body.items[1].id}`).set(...bearer(owner.token));
    expect((await createWorker(owner)).status).toBe(201);
  });

  it('reads the limits from the plans table and has none on enterprise', async () => {
    const owner = await createOrganization(t, 'Ent');
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
    for (let i = 0; i < 4; i++) expect((await createWorker(owner, `e${i}`)).status).toBe(201);
    await t.db.updateTable('plans').set({ max_workers: 4 }).where('key', '=', 'enterprise').execute();
    try {
      expect((await createWorker(owner)).body).toMatchObject({ error: 'plan_limit_reached', limit: 'workers' });
    } finally {
      await t.db.updateTable('plans').set({ max_workers: null }).where('key', '=', 'enterprise').execute();
    }
    expect((await createWorker(owner)).status).toBe(201);
  });

  it('is lifted by PLAN_GATING=off', async () => {
    const owner = await createOrganization(t, 'Ungated');
    t.settings.planGating = false;
    try {
      for (let i = 0; i < 3; i++) expect((await createWorker(owner, `u${i}`)).status).toBe(201);
    } finally {
      t.settings.planGating = true;
    }
    expect((await createWorker(owner)).status).toBe(402);
  });
});

describe('member limit at invitation accept', () => {
  async function invite(owner: { token: string }) {
    const user = await signUp(t, 'invitee');
    const res = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: user.email, role: 'member' });
    expect(res.status).toBe(201);
    return { user, invitationId: res.body.item.id as string, token: await invitationTokenFor(t, user.email) };
  }
  const accept = (who: { user: { token: string }; token: string }) => t.http.post('/v1/invitations/accept').set(...bearer(who.user.token)).send({ token: who.token });

  it('lets exactly one of three racing accepts fill the last seat; the refused invitations stay pending', async () => {
    const owner = await createOrganization(t, 'Seats');
    for (let i = 0; i < 3; i++) await addMember(t, owner.organizationId);
    // Sending invitations past the limit is allowed; accepting is what counts.
    const invites = [await invite(owner), await invite(owner), await invite(owner)];
    const results = await Promise.all(invites.map(accept));
    expect(results.map((r) => r.status).sort()).toEqual([200, 402, 402]);
    for (const refused of results.filter((r) => r.status === 402)) {
      expect(refused.body).toEqual({ error: 'plan_limit_reached', limit: 'members', message: expect.stringContaining('5 members') });
    }
    expect(await memberCount(owner.organizationId)).toBe(5);
    const list = await t.http.get('/v1/invitations').set(...bearer(owner.token));
    const statuses = invites.map((i) => list.body.items.find((x: { id: string }) => x.id === i.invitationId).status).sort();
    expect(statuses).toEqual(['accepted', 'pending', 'pending']);

    // A seat freed (a member removed) lets a pending invitation be accepted.
    const refused = invites[results.findIndex((r) => r.status === 402)]!;
    const members = await t.http.get('/v1/members').set(...bearer(owner.token));
    const removable = members.body.items.find((m: { role: string }) => m.role === 'member');
    expect((await t.http.delete(`/v1/members/${removable.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await accept(refused)).status).toBe(200);
    expect(await memberCount(owner.organizationId)).toBe(5);
  });
});
