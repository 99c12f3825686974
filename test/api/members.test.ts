import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { newId } from '../../src/lib/ids';
import { PERMISSIONS, ROLE_RANK } from '../../src/access/roles';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function createKey(token: string): Promise<string> {
  const res = await t.http.post('/v1/api-keys').set(...bearer(token)).send({ name: 'ci' });
  expect(res.status).toBe(201);
  return res.body.key as string;
}

describe('roles as data', () => {
  it('ranks in code match the roles table', async () => {
    const rows = await t.db.selectFrom('roles').select(['key', 'rank']).orderBy('rank', 'desc').execute();
    expect(Object.fromEntries(rows.map((r) => [r.key, r.rank]))).toEqual(ROLE_RANK);
    for (const rule of Object.values(PERMISSIONS)) expect(Object.keys(ROLE_RANK)).toContain(rule.minimum);
  });
});

describe('GET /v1/members', () => {
  it('lists active members newest first with their users, in pages', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const member = await addMember(t, owner.organizationId, 'member');
    const res = await t.http.get('/v1/members').set(...bearer(member.token));
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.items.map((m: { id: string }) => m.id).sort()).toEqual([owner.memberId, admin.memberId, member.memberId].sort());
    const ownerItem = res.body.items.find((m: { id: string }) => m.id === owner.memberId);
    expect(ownerItem).toEqual({
      id: owner.memberId,
      organizationId: owner.organizationId,
      type: 'user',
      userId: owner.userId,
      serviceAccountId: null,
      role: 'owner',
      status: 'active',
      createdAt: expect.any(String),
      user: { id: owner.userId, name: 'owner', email: owner.email, image: null },
      serviceAccount: null,
      // No identity provider provisioned the owner (docs/scim.md#directory-users-and-linking).
      directoryUserId: null,
    });

    const page1 = await t.http.get('/v1/members?limit=2').set(...bearer(owner.token));
    expect(page1.body.items).toHaveLength(2);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await t.http.get('/v1/members').query({ limit: 2, cursor: page1.body.nextCursor }).set(...bearer(owner.token));
    expect(page2.status).toBe(200);
    expect(page2.body.items).toHaveLength(1);
    expect(page2.body.nextCursor).toBeNull();
    const all = [...page1.body.items, ...page2.body.items].map((m: { id: string }) => m.id);
    expect(new Set(all).size).toBe(3);
  });

  it('works with an API key, answers 401 without credentials, and 400 for bad paging', async () => {
    const owner = await createOrganization(t);
    const key = await createKey(owner.token);
    const withKey = await t.http.get('/v1/members').set('x-api-key', key);
    expect(withKey.status).toBe(200);
    expect(withKey.body.items).toHaveLength(1);
    expect((await t.http.get('/v1/members')).status).toBe(401);
    const badLimit = await t.http.get('/v1/members?limit=0').set(...bearer(owner.token));
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.details[0].path).toEqual(['query', 'limit']);
    const badCursor = await t.http.get('/v1/members?cursor=forged.cursor').set(...bearer(owner.token));
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.details[0].path).toEqual(['query', 'cursor']);
  });

  it('never shows another organization\'s members', async () => {
    const a = await createOrganization(t);
    const b = await createOrganization(t);
    const res = await t.http.get('/v1/members').set(...bearer(b.token));
    expect(res.body.items.map((m: { id: string }) => m.id)).toEqual([b.memberId]);
    expect(res.body.items.map((m: { id: string }) => m.id)).not.toContain(a.memberId);
  });
});

describe('POST /v1/members/{memberId}/role', () => {
  it('lets an admin promote and demote, and a key acts with the new role at once', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const member = await addMember(t, owner.organizationId, 'member');
    const promote = await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(admin.token)).send({ role: 'admin' });
    expect(promote.status).toBe(200);
    expect(promote.body).toEqual({ ok: true, item: expect.objectContaining({ id: member.memberId, role: 'admin', userId: member.userId }) });
    const key = await createKey(member.token);
    expect((await t.http.get('/v1/api-keys').set('x-api-key', key)).status).toBe(200);

    const demote = await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role: 'member' });
    expect(demote.status).toBe(200);
    expect(demote.body.item.role).toBe('member');
    const denied = await t.http.get('/v1/api-keys').set('x-api-key', key);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
  });

  it('refuses to change the owner (409 owner_role_immutable)', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const res = await t.http.post(`/v1/members/${owner.memberId}/role`).set(...bearer(admin.token)).send({ role: 'member' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'owner_role_immutable', message: expect.any(String) });
    const self = await t.http.post(`/v1/members/${owner.memberId}/role`).set(...bearer(owner.token)).send({ role: 'admin' });
    expect(self.status).toBe(409);
  });

  it('forbids a plain member (403 org_admin_required) and needs credentials (401)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'member');
    const res = await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(member.token)).send({ role: 'admin' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'forbidden', reason: 'org_admin_required', message: expect.any(String) });
    expect((await t.http.post(`/v1/members/${member.memberId}/role`).send({ role: 'admin' })).status).toBe(401);
  });

  it('answers 404 for a member of another organization and changes nothing', async () => {
    const a = await createOrganization(t);
    const aMember = await addMember(t, a.organizationId, 'member');
    const b = await createOrganization(t);
    const res = await t.http.post(`/v1/members/${aMember.memberId}/role`).set(...bearer(b.token)).send({ role: 'admin' });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('member_not_found');
    const row = await t.db.selectFrom('members').select('role').where('id', '=', aMember.memberId).executeTakeFirstOrThrow();
    expect(row.role).toBe('member');
    const unknown = await t.http.post(`/v1/members/${newId('member')}/role`).set(...bearer(b.token)).send({ role: 'admin' });
    expect(unknown.status).toBe(404);
  });

  it('validates the role and the id', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const ownerRole = await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role: 'owner' });
    expect(ownerRole.status).toBe(400);
    expect(ownerRole.body.details[0].path).toEqual(['body', 'role']);
    const extra = await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role: 'admin', x: 1 });
    expect(extra.status).toBe(400);
    expect(extra.body.details[0].path).toEqual(['body', 'x']);
    const badId = await t.http.post('/v1/members/usr_123/role').set(...bearer(owner.token)).send({ role: 'admin' });
    expect(badId.status).toBe(400);
    expect(badId.body.details[0].path).toEqual(['path', 'memberId']);
  });
});

describe('DELETE /v1/members/{memberId}', () => {
  it('cuts a removed member off at once: sessions 404, keys 401, teams and lists drop them', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const key = await createKey(admin.token);
    const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Ops', memberIds: [admin.memberId] });
    expect(team.status).toBe(201);
    expect((await t.http.get('/v1/org').set(...bearer(admin.token))).status).toBe(200);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);

    const res = await t.http.delete(`/v1/members/${admin.memberId}`).set(...bearer(owner.token));
    expect(res.status).toBe(204);
    expect(res.text).toBe('');

    const org = await t.http.get('/v1/org').set(...bearer(admin.token));
    expect(org.status).toBe(404);
    expect(org.body.error).toBe('organization_not_found');
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(401);
    const keyRow = await t.db.selectFrom('api_keys').select('revoked_at').where('member_id', '=', admin.memberId).executeTakeFirstOrThrow();
    expect(keyRow.revoked_at).not.toBeNull();
    const teamView = await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token));
    expect(teamView.body.item.memberCount).toBe(0);
    expect((await t.http.get(`/v1/teams/${team.body.item.id}/members`).set(...bearer(owner.token))).body).toEqual({ items: [], nextCursor: null });
    const list = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(list.body.items.map((m: { id: string }) => m.id)).toEqual([owner.memberId]);
    const me = await t.http.get('/v1/me').set(...bearer(admin.token));
    expect(me.body.organizations).toEqual([]);
    expect(me.body.activeOrganizationId).toBeNull();
    // Removing again: the member is gone.
    expect((await t.http.delete(`/v1/members/${admin.memberId}`).set(...bearer(owner.token))).status).toBe(404);
  });

  it('lets a member leave, but not remove others (403)', async () => {
    const owner = await createOrganization(t);
    const a = await addMember(t, owner.organizationId, 'member');
    const b = await addMember(t, owner.organizationId, 'member');
    const other = await t.http.delete(`/v1/members/${b.memberId}`).set(...bearer(a.token));
    expect(other.status).toBe(403);
    expect(other.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    const leave = await t.http.delete(`/v1/members/${a.memberId}`).set(...bearer(a.token));
    expect(leave.status).toBe(204);
    expect((await t.http.get('/v1/org').set(...bearer(a.token))).status).toBe(404);
    expect((await t.http.get('/v1/org').set(...bearer(b.token))).status).toBe(200);
  });

  it('never removes the owner (409), not even by themself', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const res = await t.http.delete(`/v1/members/${owner.memberId}`).set(...bearer(admin.token));
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('owner_cannot_be_removed');
    expect((await t.http.delete(`/v1/members/${owner.memberId}`).set(...bearer(owner.token))).status).toBe(409);
    expect((await t.http.get('/v1/org').set(...bearer(owner.token))).status).toBe(200);
  });

  it('answers 401, 400 for a bad id, and 404 across tenants without removing anyone', async () => {
    const a = await createOrganization(t);
    const aMember = await addMember(t, a.organizationId);
    const b = await createOrganization(t);
    expect((await t.http.delete(`/v1/members/${aMember.memberId}`)).status).toBe(401);
    const bad = await t.http.delete('/v1/members/om_nope').set(...bearer(b.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'memberId']);
    const cross = await t.http.delete(`/v1/members/${aMember.memberId}`).set(...bearer(b.token));
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('member_not_found');
    expect((await t.http.get('/v1/org').set(...bearer(aMember.token))).status).toBe(200);
  });
});

describe('no acting on a higher member', () => {
  it('refuses a role change or removal of a member holding permissions the caller lacks (403 member_permissions_not_held)', async () => {
    const owner = await createOrganization(t);
    const roles = (await t.http.get('/v1/roles').set(...bearer(owner.token))).body.items as { key: string; permissions: string[] }[];
    const memberPermissions = roles.find((r) => r.key === 'member')!.permissions;
    const created = await t.http
      .post('/v1/roles')
      .set(...bearer(owner.token))
      .send({ key: 'people', name: 'People', permissions: [...memberPermissions, 'members.changeRole', 'members.remove'] });
    expect(created.status).toBe(201);
    const lead = await addMember(t, owner.organizationId, 'member');
    expect((await t.http.post(`/v1/members/${lead.memberId}/role`).set(...bearer(owner.token)).send({ role: 'people' })).status).toBe(200);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const member = await addMember(t, owner.organizationId, 'member');

    const demote = await t.http.post(`/v1/members/${admin.memberId}/role`).set(...bearer(lead.token)).send({ role: 'member' });
    expect(demote.status).toBe(403);
    expect(demote.body).toEqual({ error: 'forbidden', reason: 'member_permissions_not_held', message: expect.stringContaining('org.update') });
    const remove = await t.http.delete(`/v1/members/${admin.memberId}`).set(...bearer(lead.token));
    expect(remove.status).toBe(403);
    expect(remove.body.reason).toBe('member_permissions_not_held');
    const listed = (await t.http.get('/v1/members').set(...bearer(owner.token))).body.items as { id: string; role: string }[];
    expect(listed.find((m) => m.id === admin.memberId)?.role).toBe('admin');

    // Members whose permissions are all the caller's: another holder of the role, a plain member.
    const peer = await addMember(t, owner.organizationId, 'member');
    expect((await t.http.post(`/v1/members/${peer.memberId}/role`).set(...bearer(owner.token)).send({ role: 'people' })).status).toBe(200);
    expect((await t.http.post(`/v1/members/${peer.memberId}/role`).set(...bearer(lead.token)).send({ role: 'member' })).status).toBe(200);
    expect((await t.http.delete(`/v1/members/${member.memberId}`).set(...bearer(lead.token))).status).toBe(204);
    // The owner's rules are unchanged: 409, not 403.
    expect((await t.http.post(`/v1/members/${owner.memberId}/role`).set(...bearer(lead.token)).send({ role: 'member' })).status).toBe(409);
    expect((await t.http.delete(`/v1/members/${owner.memberId}`).set(...bearer(lead.token))).status).toBe(409);
    // The admin may act on the lead (a subset of the admin's permissions).
    expect((await t.http.delete(`/v1/members/${lead.memberId}`).set(...bearer(admin.token))).status).toBe(204);
  });
});
