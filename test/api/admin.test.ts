import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { newId } from '../../src/lib/ids';
import type { ManualClock } from '../support/clock';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function platformAdmin(): Promise<OrgOwner> {
  const owner = await createOrganization(t, 'Platform');
  await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', owner.userId).execute();
  return owner;
}

describe('GET /v1/admin/organizations', () => {
  it('lists every organization newest first with owner and member count, in pages', async () => {
    const clock = t.clock as ManualClock;
    const root = await platformAdmin();
    clock.advance(10);
    const acme = await createOrganization(t, 'Acme');
    await addMember(t, acme.organizationId);
    clock.advance(10);
    const page1 = await t.http.get('/v1/admin/organizations?limit=1').set(...bearer(root.token));
    expect(page1.status).toBe(200);
    expect(page1.body.items).toEqual([
      {
        id: acme.organizationId,
        name: 'Acme',
        plan: 'free',
        owner: { memberId: acme.memberId, userId: acme.userId, name: 'owner', email: acme.email, image: null },
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        memberCount: 2,
        state: 'active',
        deletionScheduledAt: null,
        purgeAt: null,
      },
    ]);
    const page2 = await t.http.get('/v1/admin/organizations').query({ limit: 1, cursor: page1.body.nextCursor }).set(...bearer(root.token));
    expect(page2.body.items[0]).toMatchObject({ id: root.organizationId, memberCount: 1 });
  });

  it('is for platform admins only: 403 platform_admin_required, 401 without a session or with an API key', async () => {
    const root = await platformAdmin();
    const owner = await createOrganization(t);
    const res = await t.http.get('/v1/admin/organizations').set(...bearer(owner.token));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'forbidden', reason: 'platform_admin_required', message: expect.any(String) });
    expect((await t.http.get('/v1/admin/organizations')).status).toBe(401);
    const key = (await t.http.post('/v1/api-keys').set(...bearer(root.token)).send({ name: 'k' })).body.key;
    expect((await t.http.get('/v1/admin/organizations').set('x-api-key', key)).status).toBe(401);
    const bad = await t.http.get('/v1/admin/organizations?limit=abc').set(...bearer(root.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['query', 'limit']);
  });
});

describe('PATCH /v1/admin/organizations/{organizationId}', () => {
  it('changes the plan of any organization', async () => {
    const root = await platformAdmin();
    const acme = await createOrganization(t, 'Acme');
    const res = await t.http.patch(`/v1/admin/organizations/${acme.organizationId}`).set(...bearer(root.token)).send({ plan: 'enterprise' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, item: expect.objectContaining({ id: acme.organizationId, plan: 'enterprise', memberCount: 1 }) });
    const org = await t.http.get('/v1/org').set(...bearer(acme.token));
    expect(org.body.organization.plan).toBe('enterprise');
  });

  it('forbids others (403) even an organization owner on their own organization, and changes nothing', async () => {
    const owner = await createOrganization(t);
    const res = await t.http.patch(`/v1/admin/organizations/${owner.organizationId}`).set(...bearer(owner.token)).send({ plan: 'enterprise' });
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('platform_admin_required');
    expect((await t.http.get('/v1/org').set(...bearer(owner.token))).body.organization.plan).toBe('free');
    expect((await t.http.patch(`/v1/admin/organizations/${owner.organizationId}`).send({ plan: 'team' })).status).toBe(401);
  });

  it('answers 404 for an unknown organization and 400 for a bad plan or id', async () => {
    const root = await platformAdmin();
    const missing = await t.http.patch(`/v1/admin/organizations/${newId('organization')}`).set(...bearer(root.token)).send({ plan: 'team' });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('organization_not_found');
    const badPlan = await t.http.patch(`/v1/admin/organizations/${root.organizationId}`).set(...bearer(root.token)).send({ plan: 'gold' });
    expect(badPlan.status).toBe(400);
    expect(badPlan.body.details[0].path).toEqual(['body', 'plan']);
    const badId = await t.http.patch('/v1/admin/organizations/org_1').set(...bearer(root.token)).send({ plan: 'team' });
    expect(badId.status).toBe(400);
    expect(badId.body.details[0].path).toEqual(['path', 'organizationId']);
  });
});
