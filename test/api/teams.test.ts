import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { newId } from '../../src/lib/ids';
import type { ManualClock } from '../../src/lib/clock';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function createTeam(token: string, body: Record<string, unknown>) {
  return t.http.post('/v1/teams').set(...bearer(token)).send(body);
}

describe('POST /v1/teams', () => {
  it('creates a team with members; GET /v1/org shows it to them', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const res = await createTeam(owner.token, { name: 'Platform', memberIds: [member.memberId] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      item: { id: expect.stringMatching(/^tem_/), name: 'Platform', memberIds: [member.memberId], createdAt: t.clock.now().toISOString() },
    });
    const org = await t.http.get('/v1/org').set(...bearer(member.token));
    expect(org.body.currentMemberTeams).toEqual([res.body.item]);
    const empty = await createTeam(owner.token, { name: 'Empty' });
    expect(empty.body.item.memberIds).toEqual([]);
  });

  it('refuses a duplicate name (409) and unknown or foreign member ids (404), writing nothing', async () => {
    const owner = await createOrganization(t);
    const other = await createOrganization(t);
    expect((await createTeam(owner.token, { name: 'Core' })).status).toBe(201);
    const dup = await createTeam(owner.token, { name: 'core' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toBe('team_name_taken');
    // Another organization may use the same name.
    expect((await createTeam(other.token, { name: 'Core' })).status).toBe(201);
    const foreign = await createTeam(owner.token, { name: 'Mixed', memberIds: [owner.memberId, other.memberId] });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('member_not_found');
    const list = await t.http.get('/v1/teams').set(...bearer(owner.token));
    expect(list.body.items.map((x: { name: string }) => x.name)).toEqual(['Core']);
  });

  it('needs an admin (403), credentials (401), and a valid body (400)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const denied = await createTeam(member.token, { name: 'Mine' });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    expect((await t.http.post('/v1/teams').send({ name: 'x' })).status).toBe(401);
    const noName = await createTeam(owner.token, { memberIds: [] });
    expect(noName.status).toBe(400);
    expect(noName.body.details[0].path).toEqual(['body', 'name']);
    const badId = await createTeam(owner.token, { name: 'x', memberIds: ['usr_nope'] });
    expect(badId.status).toBe(400);
    expect(badId.body.details[0].path).toEqual(['body', 'memberIds', '0']);
  });
});

describe('GET /v1/teams and /v1/teams/{teamId}', () => {
  it('lists newest first in pages and reads one team; members may read', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const first = await createTeam(owner.token, { name: 'A' });
    clock.advance(10);
    const second = await createTeam(owner.token, { name: 'B' });
    const page1 = await t.http.get('/v1/teams?limit=1').set(...bearer(member.token));
    expect(page1.status).toBe(200);
    expect(page1.body.items).toEqual([second.body.item]);
    const page2 = await t.http.get('/v1/teams').query({ limit: 1, cursor: page1.body.nextCursor }).set(...bearer(member.token));
    expect(page2.body).toEqual({ items: [first.body.item], nextCursor: null });
    const one = await t.http.get(`/v1/teams/${first.body.item.id}`).set(...bearer(member.token));
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ ok: true, item: first.body.item });
  });

  it('answers 401, 404 across tenants, 400 for a bad id', async () => {
    const a = await createOrganization(t);
    const b = await createOrganization(t);
    const team = await createTeam(a.token, { name: 'Secret' });
    expect((await t.http.get('/v1/teams')).status).toBe(401);
    expect((await t.http.get(`/v1/teams/${team.body.item.id}`)).status).toBe(401);
    const cross = await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(b.token));
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('team_not_found');
    expect((await t.http.get('/v1/teams').set(...bearer(b.token))).body.items).toEqual([]);
    const bad = await t.http.get('/v1/teams/mkt_x').set(...bearer(b.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'teamId']);
  });
});

describe('PATCH and DELETE /v1/teams/{teamId}', () => {
  it('renames and deletes (admin); members stay in the organization', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const member = await addMember(t, owner.organizationId);
    const team = await createTeam(owner.token, { name: 'Old', memberIds: [member.memberId] });
    const renamed = await t.http.patch(`/v1/teams/${team.body.item.id}`).set(...bearer(admin.token)).send({ name: 'New' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ok: true, item: { ...team.body.item, name: 'New' } });
    const del = await t.http.delete(`/v1/teams/${team.body.item.id}`).set(...bearer(admin.token));
    expect(del.status).toBe(204);
    expect((await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token))).status).toBe(404);
    const org = await t.http.get('/v1/org').set(...bearer(member.token));
    expect(org.status).toBe(200);
    expect(org.body.currentMemberTeams).toEqual([]);
    expect((await t.http.delete(`/v1/teams/${team.body.item.id}`).set(...bearer(admin.token))).status).toBe(404);
  });

  it('refuses a rename onto another team\'s name (409)', async () => {
    const owner = await createOrganization(t);
    await createTeam(owner.token, { name: 'Taken' });
    const team = await createTeam(owner.token, { name: 'Free' });
    const res = await t.http.patch(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token)).send({ name: 'TAKEN' });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('team_name_taken');
  });

  it('forbids a plain member (403), needs credentials (401), validates (400), hides other tenants (404)', async () => {
    const a = await createOrganization(t);
    const member = await addMember(t, a.organizationId);
    const b = await createOrganization(t);
    const team = await createTeam(a.token, { name: 'Guarded' });
    const id = team.body.item.id;
    const patch = await t.http.patch(`/v1/teams/${id}`).set(...bearer(member.token)).send({ name: 'Hijacked' });
    expect(patch.status).toBe(403);
    expect(patch.body.reason).toBe('org_admin_required');
    const del = await t.http.delete(`/v1/teams/${id}`).set(...bearer(member.token));
    expect(del.status).toBe(403);
    expect(del.body.reason).toBe('org_admin_required');
    expect((await t.http.patch(`/v1/teams/${id}`).send({ name: 'x' })).status).toBe(401);
    expect((await t.http.delete(`/v1/teams/${id}`)).status).toBe(401);
    const empty = await t.http.patch(`/v1/teams/${id}`).set(...bearer(a.token)).send({ name: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.details[0].path).toEqual(['body', 'name']);
    expect((await t.http.patch(`/v1/teams/${id}`).set(...bearer(b.token)).send({ name: 'Mine' })).status).toBe(404);
    expect((await t.http.delete(`/v1/teams/${id}`).set(...bearer(b.token))).status).toBe(404);
    const after = await t.http.get(`/v1/teams/${id}`).set(...bearer(a.token));
    expect(after.body.item.name).toBe('Guarded');
  });
});

describe('PUT and DELETE /v1/teams/{teamId}/members/{memberId}', () => {
  it('adds idempotently and removes a member', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const team = await createTeam(owner.token, { name: 'Crew' });
    const path = `/v1/teams/${team.body.item.id}/members/${member.memberId}`;
    const add = await t.http.put(path).set(...bearer(owner.token));
    expect(add.status).toBe(200);
    expect(add.body).toEqual({ ok: true, item: { ...team.body.item, memberIds: [member.memberId] } });
    const again = await t.http.put(path).set(...bearer(owner.token));
    expect(again.body.item.memberIds).toEqual([member.memberId]);
    expect((await t.http.get('/v1/org').set(...bearer(member.token))).body.currentMemberTeams).toHaveLength(1);
    const remove = await t.http.delete(path).set(...bearer(owner.token));
    expect(remove.status).toBe(204);
    expect((await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token))).body.item.memberIds).toEqual([]);
    expect((await t.http.delete(path).set(...bearer(owner.token))).status).toBe(204);
  });

  it('forbids a plain member (403) and needs credentials (401)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const team = await createTeam(owner.token, { name: 'Closed' });
    const path = `/v1/teams/${team.body.item.id}/members/${member.memberId}`;
    const put = await t.http.put(path).set(...bearer(member.token));
    expect(put.status).toBe(403);
    expect(put.body.reason).toBe('org_admin_required');
    const del = await t.http.delete(path).set(...bearer(member.token));
    expect(del.status).toBe(403);
    expect((await t.http.put(path)).status).toBe(401);
    expect((await t.http.delete(path)).status).toBe(401);
  });

  it('answers 404 for another organization\'s team or member and writes nothing; 400 for bad ids', async () => {
    const a = await createOrganization(t);
    const aMember = await addMember(t, a.organizationId);
    const b = await createOrganization(t);
    const aTeam = await createTeam(a.token, { name: 'A team' });
    const bTeam = await createTeam(b.token, { name: 'B team' });
    const foreignTeam = await t.http.put(`/v1/teams/${aTeam.body.item.id}/members/${b.memberId}`).set(...bearer(b.token));
    expect(foreignTeam.status).toBe(404);
    expect(foreignTeam.body.error).toBe('team_not_found');
    const foreignMember = await t.http.put(`/v1/teams/${bTeam.body.item.id}/members/${aMember.memberId}`).set(...bearer(b.token));
    expect(foreignMember.status).toBe(404);
    expect(foreignMember.body.error).toBe('member_not_found');
    expect((await t.http.delete(`/v1/teams/${bTeam.body.item.id}/members/${aMember.memberId}`).set(...bearer(b.token))).status).toBe(404);
    expect((await t.http.put(`/v1/teams/${bTeam.body.item.id}/members/${newId('member')}`).set(...bearer(b.token))).status).toBe(404);
    const rows = await t.db.selectFrom('team_members').select('member_id').where('team_id', 'in', [aTeam.body.item.id, bTeam.body.item.id]).execute();
    expect(rows).toEqual([]);
    const bad = await t.http.put(`/v1/teams/${bTeam.body.item.id}/members/bad`).set(...bearer(b.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'memberId']);
  });
});
