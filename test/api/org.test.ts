import { sql } from 'kysely';
import type { ManualClock } from '../support/clock';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** An API key row for a member (the key routes are tested with the people area). */
async function apiKeyFor(organizationId: string, memberId: string): Promise<string> {
  const key = randomSecret('cpk');
  await t.db
    .insertInto('api_keys')
    .values({ id: newId('apiKey'), organization_id: organizationId, member_id: memberId, name: 'k', prefix: key.slice(0, 12), key_hash: sha256Hex(key), created_at: t.clock.now(), expires_at: null, last_used_at: null, revoked_at: null })
    .execute();
  return key;
}

describe('GET /v1/org', () => {
  it('returns the owner, the current member and their teams', async () => {
    const owner = await createOrganization(t, 'Context Co');
    const res = await t.http.get('/v1/org').set(...bearer(owner.token));
    expect(res.status).toBe(200);
    expect(res.body.organization).toMatchObject({ id: owner.organizationId, name: 'Context Co', plan: 'free' });
    expect(res.body.organization.owner).toEqual({ memberId: owner.memberId, userId: owner.userId, name: 'owner', email: owner.email, image: null });
    expect(res.body.currentMember).toMatchObject({ id: owner.memberId, role: 'owner', userId: owner.userId });
    expect(res.body.currentMemberTeams).toEqual([]);
  });

  it('shows a second member their own record and the same owner', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'member');
    const now = t.clock.now();
    const teamId = newId('team');
    await t.db.insertInto('teams').values({ id: teamId, organization_id: owner.organizationId, name: 'Core', created_at: now, updated_at: now }).execute();
    await t.db.insertInto('team_members').values({ team_id: teamId, member_id: member.memberId, organization_id: owner.organizationId, created_at: now }).execute();

    const res = await t.http.get('/v1/org').set(...bearer(member.token));
    expect(res.status).toBe(200);
    expect(res.body.organization.owner.memberId).toBe(owner.memberId);
    expect(res.body.currentMember).toMatchObject({ id: member.memberId, role: 'member' });
    expect(res.body.currentMemberTeams).toEqual([{ id: teamId, name: 'Core', memberCount: 1, createdAt: now.toISOString() }]);
    const ownerView = await t.http.get('/v1/org').set(...bearer(owner.token));
    expect(ownerView.body.currentMemberTeams).toEqual([]);
  });

  it('lists the caller\'s teams oldest first, each with its count of active members (never their ids)', async () => {
    const owner = await createOrganization(t);
    const a = await addMember(t, owner.organizationId);
    const b = await addMember(t, owner.organizationId);
    const gone = await addMember(t, owner.organizationId);
    const now = t.clock.now();
    const later = new Date(now.getTime() + 1000);
    const older = newId('team');
    const newer = newId('team');
    const notMine = newId('team');
    await t.db.insertInto('teams').values([
      { id: newer, organization_id: owner.organizationId, name: 'Newer', created_at: later, updated_at: later },
      { id: older, organization_id: owner.organizationId, name: 'Older', created_at: now, updated_at: now },
      { id: notMine, organization_id: owner.organizationId, name: 'Not mine', created_at: now, updated_at: now },
    ]).execute();
    const link = (teamId: string, memberId: string, at: Date) => ({ team_id: teamId, member_id: memberId, organization_id: owner.organizationId, created_at: at });
    await t.db.insertInto('team_members').values([
      link(older, b.memberId, later),
      link(older, a.memberId, now),
      link(older, gone.memberId, now),
      link(newer, a.memberId, now),
      link(notMine, b.memberId, now),
    ]).execute();
    await t.db.updateTable('members').set({ removed_at: now }).where('id', '=', gone.memberId).execute();

    const res = await t.http.get('/v1/org').set(...bearer(a.token));
    expect(res.status).toBe(200);
    expect(res.body.currentMember).toMatchObject({ id: a.memberId, role: 'member', userId: a.userId, user: { id: a.userId, email: a.email } });
    expect(res.body.organization.owner).toMatchObject({ memberId: owner.memberId, userId: owner.userId, email: owner.email });
    expect(res.body.currentMemberTeams).toEqual([
      { id: older, name: 'Older', memberCount: 2, createdAt: now.toISOString() },
      { id: newer, name: 'Newer', memberCount: 1, createdAt: later.toISOString() },
    ]);
  });

  it('shows each team exactly as the teams API does (names that need escaping, sub-millisecond times)', async () => {
    // The teams of GET /v1/org are JSON made by Postgres and sent as is; the teams API maps the
    // same rows in TypeScript. Both must write the same values.
    const owner = await createOrganization(t);
    const names = ['Quote " and \\ backslash', 'Line\nbreak\ttab', 'Ünïcødé 🚀 \u2028', '<script>&amp;</script>'];
    const ids = names.map(() => newId('team'));
    for (const [i, name] of names.entries()) {
      // Written by SQL with sub-millisecond digits, not from a JS Date (which holds milliseconds).
      await sql`INSERT INTO teams (id, organization_id, name, created_at, updated_at)
        VALUES (${ids[i]}, ${owner.organizationId}, ${name}, ${`2026-03-04 05:06:07.${String(i)}894+00`}::timestamptz, now())`.execute(t.db);
      await t.db.insertInto('team_members').values({ team_id: ids[i]!, member_id: owner.memberId, organization_id: owner.organizationId, created_at: t.clock.now() }).execute();
    }
    const res = await t.http.get('/v1/org').set(...bearer(owner.token));
    expect(res.status).toBe(200);
    const fromTeamsApi = [];
    for (const id of ids) {
      const team = await t.http.get(`/v1/teams/${id}`).set(...bearer(owner.token));
      expect(team.status).toBe(200);
      fromTeamsApi.push(team.body.item);
    }
    expect(res.body.currentMemberTeams).toEqual(fromTeamsApi);
    expect(res.body.currentMemberTeams.map((team: { name: string; createdAt: string }) => [team.name, team.createdAt])).toEqual(
      names.map((name, i) => [name, `2026-03-04T05:06:07.${String(i)}89Z`]),
    );
  });

  it('writes the organization and the current member exactly as the other endpoints do', async () => {
    // GET /v1/org reads its context in the session query (src/org/store.ts); PATCH /v1/org and
    // GET /v1/members read the same rows their own way.
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'admin');
    await t.db.updateTable('users').set({ name: 'Zoë "Q" \\ \n\t 🚀', image: 'https://img.example/a?b="c"&d=\u2028' }).where('id', '=', member.userId).execute();
    (t.clock as ManualClock).advance(1234);
    const renamed = await t.http.patch('/v1/org').set(...bearer(member.token)).send({ name: 'Renamed "co" \\ <b>' });
    expect(renamed.status).toBe(200);
    const members = await t.http.get('/v1/members').set(...bearer(member.token));
    const res = await t.http.get('/v1/org').set(...bearer(member.token));
    expect(res.status).toBe(200);
    expect(res.body.organization).toEqual(renamed.body.item);
    expect(res.body.currentMember).toEqual(members.body.items.find((m: { id: string }) => m.id === member.memberId));
    expect(res.body.currentMember.user).toEqual({ id: member.userId, name: 'Zoë "Q" \\ \n\t 🚀', email: member.email, image: 'https://img.example/a?b="c"&d=\u2028' });

    // An organization without an owner (one demoted by hand) shows `owner: null`, as the mapper does.
    await t.db.updateTable('members').set({ role: 'admin' }).where('id', '=', owner.memberId).execute();
    const ownerless = await t.http.patch('/v1/org').set(...bearer(member.token)).send({ name: 'No owner' });
    const view = await t.http.get('/v1/org').set(...bearer(member.token));
    expect(ownerless.body.item.owner).toBeNull();
    expect(view.body.organization).toEqual(ownerless.body.item);
  });

  it('answers 401 without a token, with a bad token, and with an API key', async () => {
    const owner = await createOrganization(t);
    const none = await t.http.get('/v1/org');
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('unauthorized');
    expect((await t.http.get('/v1/org').set('authorization', 'Bearer cps_forged')).status).toBe(401);
    expect((await t.http.get('/v1/org').set('authorization', 'Basic abc')).status).toBe(401);
    const key = await apiKeyFor(owner.organizationId, owner.memberId);
    const withKey = await t.http.get('/v1/org').set('x-api-key', key);
    expect(withKey.status).toBe(401);
    // The same key works where API keys are accepted.
    const me = await t.http.get('/v1/me').set('x-api-key', key);
    expect(me.status).toBe(200);
    expect(me.body.activeOrganizationId).toBe(owner.organizationId);
  });

  it('answers 404 once the member has been removed', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    await t.db.updateTable('members').set({ removed_at: t.clock.now() }).where('id', '=', member.memberId).execute();
    const res = await t.http.get('/v1/org').set(...bearer(member.token));
    expect(res.status).toBe(404);
  });
});

describe('POST and PATCH /v1/org', () => {
  it('creates an organization on plan free and lets an admin rename it', async () => {
    const owner = await createOrganization(t, 'Before');
    const admin = await addMember(t, owner.organizationId, 'admin');
    const res = await t.http.patch('/v1/org').set(...bearer(admin.token)).send({ name: 'After' });
    expect(res.status).toBe(200);
    expect(res.body.item).toMatchObject({ id: owner.organizationId, name: 'After', plan: 'free' });
  });

  it('forbids a plain member from renaming (403 with a reason)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId, 'member');
    const res = await t.http.patch('/v1/org').set(...bearer(member.token)).send({ name: 'Mine now' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
  });

  it('renames only the caller\'s organization', async () => {
    const a = await createOrganization(t, 'Alpha');
    const b = await createOrganization(t, 'Beta');
    await t.http.patch('/v1/org').set(...bearer(a.token)).send({ name: 'Alpha 2' });
    const bView = await t.http.get('/v1/org').set(...bearer(b.token));
    expect(bView.body.organization.name).toBe('Beta');
  });

  it('validates the name', async () => {
    const owner = await createOrganization(t);
    const long = await t.http.post('/v1/org').set(...bearer(owner.token)).send({ name: 'x'.repeat(256) });
    expect(long.status).toBe(400);
    expect(long.body.details[0].path).toEqual(['body', 'name']);
    const empty = await t.http.patch('/v1/org').set(...bearer(owner.token)).send({});
    expect(empty.status).toBe(400);
    expect(empty.body.details).toContainEqual({ message: 'is required', path: ['body', 'name'] });
  });
});
