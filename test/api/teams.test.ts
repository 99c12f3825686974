import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { newId } from '../../src/lib/ids';
import type { ManualClock } from '../support/clock';

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
      item: { id: expect.stringMatching(/^tem_/), name: 'Platform', memberCount: 1, createdAt: t.clock.now().toISOString() },
    });
    const org = await t.http.get('/v1/org').set(...bearer(member.token));
    expect(org.body.currentMemberTeams).toEqual([res.body.item]);
    const empty = await createTeam(owner.token, { name: 'Empty' });
    expect(empty.body.item).toEqual({ id: expect.stringMatching(/^tem_/), name: 'Empty', memberCount: 0, createdAt: t.clock.now().toISOString() });
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
    expect(add.body).toEqual({ ok: true, item: { ...team.body.item, memberCount: 1 } });
    const again = await t.http.put(path).set(...bearer(owner.token));
    expect(again.body.item.memberCount).toBe(1);
    expect((await t.http.get('/v1/org').set(...bearer(member.token))).body.currentMemberTeams).toHaveLength(1);
    const remove = await t.http.delete(path).set(...bearer(owner.token));
    expect(remove.status).toBe(204);
    expect((await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token))).body.item.memberCount).toBe(0);
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

/**
 * `n` members of the organization added straight in SQL, all in `teamId`, joined one millisecond
 * apart (the i-th of the returned ids joined i ms after the clock's now).
 */
async function seedTeamMembers(organizationId: string, teamId: string, n: number): Promise<string[]> {
  const base = t.clock.now().toISOString();
  const userIds = Array.from({ length: n }, () => newId('user'));
  const memberIds = Array.from({ length: n }, () => newId('member'));
  const label = randomBytes(4).toString('hex');
  await sql`INSERT INTO users (id, email, email_normalized, name, created_at, updated_at)
    SELECT u.id, ${`${label}-`} || u.n || '@example.test', ${`${label}-`} || u.n || '@example.test', 'Seeded ' || u.n, ${base}::timestamptz, ${base}::timestamptz
    FROM unnest(${userIds}::text[]) WITH ORDINALITY AS u(id, n)`.execute(t.db);
  await sql`INSERT INTO members (id, organization_id, user_id, role, created_at)
    SELECT m.id, ${organizationId}, (${userIds}::text[])[m.n], 'member', ${base}::timestamptz FROM unnest(${memberIds}::text[]) WITH ORDINALITY AS m(id, n)`.execute(t.db);
  await sql`INSERT INTO team_members (team_id, member_id, organization_id, created_at)
    SELECT ${teamId}, m.id, ${organizationId}, ${base}::timestamptz + m.n * interval '1 millisecond' FROM unnest(${memberIds}::text[]) WITH ORDINALITY AS m(id, n)`.execute(t.db);
  return memberIds;
}

describe('GET /v1/teams/{teamId}/members', () => {
  it('pages the team\'s members newest first, as GET /v1/members writes them, at any depth', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const team = await createTeam(owner.token, { name: 'Everyone' });
    const teamId = team.body.item.id as string;
    const seeded = await seedTeamMembers(owner.organizationId, teamId, 120);
    (t.clock as ManualClock).advance(1000);
    expect((await t.http.put(`/v1/teams/${teamId}/members/${member.memberId}`).set(...bearer(owner.token))).body.item.memberCount).toBe(121);

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await t.http.get(`/v1/teams/${teamId}/members`).query({ limit: 50, ...(cursor ? { cursor } : {}) }).set(...bearer(member.token));
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((m: { id: string }) => m.id));
      cursor = res.body.nextCursor ?? undefined;
    } while (cursor);
    // Most recently added first: the member added last, then the seeded ones from the 120th down.
    expect(seen).toEqual([member.memberId, ...seeded.reverse()]);

    // Each item is the member as GET /v1/members writes it.
    const byId = new Map<string, unknown>();
    let after: string | undefined;
    do {
      const res = await t.http.get('/v1/members').query({ limit: 100, ...(after ? { cursor: after } : {}) }).set(...bearer(owner.token));
      for (const m of res.body.items) byId.set(m.id, m);
      after = res.body.nextCursor ?? undefined;
    } while (after);
    const first = await t.http.get(`/v1/teams/${teamId}/members?limit=3`).set(...bearer(owner.token));
    expect(first.body.items).toEqual(seen.slice(0, 3).map((id) => byId.get(id)));
  });

  it('keeps memberCount through adds, removals, a member leaving the organization and a cursor from another team', async () => {
    const owner = await createOrganization(t);
    const a = await addMember(t, owner.organizationId);
    const b = await addMember(t, owner.organizationId, 'admin');
    const team = await createTeam(owner.token, { name: 'Counted', memberIds: [owner.memberId, a.memberId, b.memberId] });
    const other = await createTeam(owner.token, { name: 'Other', memberIds: [a.memberId, b.memberId] });
    expect(team.body.item.memberCount).toBe(3);
    const count = async (id: string) => (await t.http.get(`/v1/teams/${id}`).set(...bearer(owner.token))).body.item.memberCount;
    await t.http.put(`/v1/teams/${team.body.item.id}/members/${a.memberId}`).set(...bearer(owner.token));
    expect(await count(team.body.item.id)).toBe(3);
    expect((await t.http.delete(`/v1/teams/${team.body.item.id}/members/${owner.memberId}`).set(...bearer(owner.token))).status).toBe(204);
    expect(await count(team.body.item.id)).toBe(2);
    expect((await t.http.delete(`/v1/members/${b.memberId}`).set(...bearer(owner.token))).status).toBe(204);
    expect(await count(team.body.item.id)).toBe(1);
    expect(await count(other.body.item.id)).toBe(1);
    const list = await t.http.get('/v1/teams').set(...bearer(owner.token));
    expect(list.body.items.map((x: { memberCount: number }) => x.memberCount)).toEqual([1, 1]);
    const page = await t.http.get(`/v1/teams/${team.body.item.id}/members`).set(...bearer(a.token));
    expect(page.body).toEqual({ items: [expect.objectContaining({ id: a.memberId })], nextCursor: null });

    // A cursor of one team's list is refused for another's.
    const one = await t.http.get(`/v1/teams/${other.body.item.id}/members?limit=1`).set(...bearer(owner.token));
    expect(one.body.nextCursor).toBeNull();
    await t.http.put(`/v1/teams/${other.body.item.id}/members/${owner.memberId}`).set(...bearer(owner.token));
    const paged = await t.http.get(`/v1/teams/${other.body.item.id}/members?limit=1`).set(...bearer(owner.token));
    const foreignCursor = await t.http.get(`/v1/teams/${team.body.item.id}/members`).query({ cursor: paged.body.nextCursor }).set(...bearer(owner.token));
    expect(foreignCursor.status).toBe(400);
    expect(foreignCursor.body.details[0].path).toEqual(['query', 'cursor']);
  });

  it('refuses a team row for a removed member in the database itself, and never counts one', async () => {
    const owner = await createOrganization(t);
    const gone = await addMember(t, owner.organizationId);
    const team = await createTeam(owner.token, { name: 'Guarded', memberIds: [gone.memberId] });
    await t.db.updateTable('members').set({ removed_at: t.clock.now() }).where('id', '=', gone.memberId).execute();
    const rows = await t.db.selectFrom('team_members').select('member_id').where('team_id', '=', team.body.item.id).execute();
    expect(rows).toEqual([]);
    await expect(
      t.db.insertInto('team_members').values({ team_id: team.body.item.id, member_id: gone.memberId, organization_id: owner.organizationId, created_at: t.clock.now() }).execute(),
    ).rejects.toMatchObject({ code: '23503' });
    expect((await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token))).body.item.memberCount).toBe(0);
  });

  it('keeps GET /v1/org, GET /v1/teams and the team the same size whatever the team\'s size', async () => {
    const owner = await createOrganization(t);
    const small = await createTeam(owner.token, { name: 'Team', memberIds: [owner.memberId] });
    const sizes = async () => {
      const org = await t.http.get('/v1/org').set(...bearer(owner.token));
      const list = await t.http.get('/v1/teams').set(...bearer(owner.token));
      const one = await t.http.get(`/v1/teams/${small.body.item.id}`).set(...bearer(owner.token));
      expect(org.text).not.toContain('memberIds');
      return [org.text.length, list.text.length, one.text.length];
    };
    const before = await sizes();
    await seedTeamMembers(owner.organizationId, small.body.item.id, 999);
    // 1 → 1000 members: three more digits in memberCount, nothing else.
    expect(await sizes()).toEqual(before.map((n) => n + 3));
    const org = await t.http.get('/v1/org').set(...bearer(owner.token));
    expect(org.body.currentMemberTeams).toEqual([{ ...small.body.item, memberCount: 1000 }]);
  });

  it('answers 404 for another organization\'s team, 401 without credentials, 400 for bad input', async () => {
    const a = await createOrganization(t);
    const b = await createOrganization(t);
    const team = await createTeam(a.token, { name: 'Private', memberIds: [a.memberId] });
    const path = `/v1/teams/${team.body.item.id}/members`;
    const cross = await t.http.get(path).set(...bearer(b.token));
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('team_not_found');
    expect((await t.http.get(`/v1/teams/${newId('team')}/members`).set(...bearer(a.token))).status).toBe(404);
    expect((await t.http.get(path)).status).toBe(401);
    const bad = await t.http.get('/v1/teams/mkt_x/members').set(...bearer(a.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'teamId']);
    const limit = await t.http.get(`${path}?limit=0`).set(...bearer(a.token));
    expect(limit.status).toBe(400);
    expect(limit.body.details[0].path).toEqual(['query', 'limit']);
    const cursor = await t.http.get(`${path}?cursor=forged.cursor`).set(...bearer(a.token));
    expect(cursor.status).toBe(400);
    expect(cursor.body.details[0].path).toEqual(['query', 'cursor']);
  });
});
