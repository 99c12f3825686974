import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD } from '../support/factories';
import type { ManualClock } from '../support/clock';
import { sha256Hex } from '../../src/lib/crypto';
import { ENTERPRISE, PATCH_OP, scimClient, scimError, scimOrganization, type ScimOrg } from '../support/scim';

let t: TestApp;
let org: ScimOrg;
let scim: ReturnType<typeof scimClient>;
beforeAll(async () => {
  t = await createTestApp();
  org = await scimOrganization(t, 'Groups');
  scim = scimClient(t, org.token);
}, 300_000);
afterAll(() => t.close());

/** The team's members, as its paged members route lists them (one page is enough here). */
async function teamMemberIds(teamId: string): Promise<string[]> {
  const res = await t.http.get(`/v1/teams/${teamId}/members`).set(...bearer(org.owner.token));
  return res.body.items.map((m: { id: string }) => m.id);
}

/** The member a directory user is linked to, as GET /v1/scim/users shows it. */
async function memberOf(directoryUserId: string): Promise<string | null> {
  let cursor: string | undefined;
  for (;;) {
    const res = await t.http.get('/v1/scim/users').set(...bearer(org.owner.token)).query(cursor ? { limit: 100, cursor } : { limit: 100 });
    const found = res.body.items.find((u: { id: string }) => u.id === directoryUserId);
    if (found) return found.memberId;
    if (!res.body.nextCursor) return null;
    cursor = res.body.nextCursor;
  }
}

describe('SCIM tokens', () => {
  it('shows a token once, stores its hash, lists it without secrets and revokes it at once', async () => {
    const res = await t.http.post('/v1/scim/tokens').set(...bearer(org.owner.token)).send({ name: 'Okta' });
    expect(res.status).toBe(201);
    const token: string = res.body.token;
    expect(res.body.item).toEqual({ id: expect.stringMatching(/^sct_/), name: 'Okta', prefix: token.slice(0, 14), createdAt: t.clock.now().toISOString(), lastUsedAt: null });
    const row = await t.db.selectFrom('scim_tokens').select(['token_hash', 'organization_id']).where('id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ token_hash: sha256Hex(token), organization_id: org.owner.organizationId });

    expect((await scimClient(t, token).get('/ServiceProviderConfig')).status).toBe(200);
    const list = await t.http.get('/v1/scim/tokens').set(...bearer(org.owner.token));
    expect(list.status).toBe(200);
    const listed = list.body.items.find((i: { id: string }) => i.id === res.body.item.id);
    expect(listed).toEqual({ ...res.body.item, lastUsedAt: t.clock.now().toISOString() });
    expect(JSON.stringify(list.body)).not.toContain(token);

    expect((await t.http.delete(`/v1/scim/tokens/${res.body.item.id}`).set(...bearer(org.owner.token))).status).toBe(204);
    scimError(await scimClient(t, token).get('/Users'), 401);
    const after = await t.http.get('/v1/scim/tokens').set(...bearer(org.owner.token));
    expect(after.body.items.map((i: { id: string }) => i.id)).not.toContain(res.body.item.id);
    expect((await t.http.delete(`/v1/scim/tokens/${res.body.item.id}`).set(...bearer(org.owner.token))).body.error).toBe('scim_token_not_found');
  });

  it('needs scim.manage, a session and the enterprise plan', async () => {
    const member = await addMember(t, org.owner.organizationId, 'member');
    const denied = await t.http.post('/v1/scim/tokens').set(...bearer(member.token)).send({ name: 'x' });
    expect({ status: denied.status, reason: denied.body.reason }).toEqual({ status: 403, reason: 'permission_required' });
    const key = (await t.http.post('/v1/api-keys').set(...bearer(org.owner.token)).send({ name: 'k' })).body.key;
    expect((await t.http.post('/v1/scim/tokens').set('x-api-key', key).send({ name: 'x' })).status).toBe(401);
    const free = await createOrganization(t, 'Free');
    const refused = await t.http.post('/v1/scim/tokens').set(...bearer(free.token)).send({ name: 'x' });
    expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 402, error: 'enterprise_plan_required' });
    const other = await t.http.get('/v1/scim/tokens').set(...bearer(free.token));
    expect(other.body.items).toEqual([]);
    expect((await t.http.delete(`/v1/scim/tokens/${org.tokenId}`).set(...bearer(free.token))).status).toBe(404);
  });
});

describe('discovery', () => {
  it('describes the endpoint, its resource types and schemas', async () => {
    const config = await scim.get('/ServiceProviderConfig');
    expect(config.body).toMatchObject({ patch: { supported: true }, filter: { supported: true, maxResults: 200 }, bulk: { supported: false }, sort: { supported: false }, etag: { supported: false }, changePassword: { supported: false } });
    const types = await scim.get('/ResourceTypes');
    expect(types.body).toMatchObject({ totalResults: 2, itemsPerPage: 2 });
    expect(types.body.Resources.map((r: { id: string }) => r.id)).toEqual(['User', 'Group']);
    expect(types.body.Resources[0].schemaExtensions).toEqual([{ schema: ENTERPRISE, required: false }]);
    const schemas = await scim.get('/Schemas');
    expect(schemas.body.Resources.map((s: { id: string }) => s.id)).toEqual(['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:core:2.0:Group', ENTERPRISE]);
    expect((await scim.get(`/Schemas/${ENTERPRISE}`)).body.name).toBe('EnterpriseUser');
    expect((await scim.get('/ResourceTypes/group')).body.endpoint).toBe('/Groups');
    scimError(await scim.get('/Schemas/urn:nope'), 404);
  });
});

describe('Groups', () => {
  async function user(name: string) {
    return (await scim.post('/Users', { userName: `${name}@groups.example` })).body as { id: string };
  }

  it('keeps names unique ignoring case', async () => {
    expect((await scim.post('/Groups', { displayName: 'Platform' })).status).toBe(201);
    scimError(await scim.post('/Groups', { displayName: 'PLATFORM' }), 409, 'uniqueness');
    const other = (await scim.post('/Groups', { displayName: 'Other' })).body;
    scimError(await scim.patch(`/Groups/${other.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'platform' }] }), 409, 'uniqueness');
    scimError(await scim.post('/Groups', { externalId: 'no-name' }), 400, 'invalidValue');
  });

  it('refuses a member id that is not a member, changing nothing', async () => {
    const a = await user('g-a');
    const group = (await scim.post('/Groups', { displayName: 'Strict', members: [{ value: a.id }] })).body;
    scimError(await scim.patch(`/Groups/${group.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: 'om_01h2xcejqtf2nbrexx3vqjhp41' }] }] }), 400, 'invalidValue');
    scimError(await scim.post('/Groups', { displayName: 'Never', members: [{ value: 'nobody' }] }), 400, 'invalidValue');
    scimError(await scim.put(`/Groups/${group.id}`, { displayName: 'Renamed', members: [{ value: a.id }, { value: 'nobody' }] }), 400, 'invalidValue');
    expect((await scim.get(`/Groups/${group.id}`)).body).toMatchObject({ displayName: 'Strict', members: [{ value: a.id }] });
    expect((await scim.get('/Groups', { filter: 'displayName eq "never"' })).body.totalResults).toBe(0);
  });

  it('filters by displayName, externalId and members, pages, and keeps suspended members in teams', async () => {
    const a = await user('g-filter-a');
    const b = await user('g-filter-b');
    const g1 = (await scim.post('/Groups', { displayName: 'Filter One', externalId: 'ext-1', members: [{ value: a.id }] })).body;
    const g2 = (await scim.post('/Groups', { displayName: 'Filter Two', externalId: 'ext-2', members: [{ value: a.id }, { value: b.id }] })).body;
    const find = async (filter: string) => (await scim.get('/Groups', { filter })).body.Resources.map((g: { id: string }) => g.id);
    expect(await find('displayName sw "filter "')).toEqual([g1.id, g2.id]);
    expect(await find('externalId eq "ext-2"')).toEqual([g2.id]);
    expect(await find(`members[value eq "${b.id}"]`)).toEqual([g2.id]);
    expect(await find(`members.value eq "${a.id}" and not (displayName eq "filter one")`)).toEqual([g2.id]);
    const page = await scim.get('/Groups', { filter: 'displayName sw "Filter"', startIndex: 2, count: 1, attributes: 'displayName' });
    expect(page.body).toMatchObject({ totalResults: 2, itemsPerPage: 1, Resources: [{ id: g2.id, displayName: 'Filter Two' }] });
    expect(page.body.Resources[0]).not.toHaveProperty('members');

    await scim.patch(`/Users/${b.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect((await scim.get(`/Groups/${g2.id}`)).body.members.map((m: { value: string }) => m.value)).toEqual([a.id, b.id]);
    // Deleting a User takes it out of its teams, as DELETE /v1/members does.
    expect((await scim.delete(`/Users/${a.id}`)).status).toBe(204);
    expect((await scim.get(`/Groups/${g2.id}`)).body.members.map((m: { value: string }) => m.value)).toEqual([b.id]);
  });

  it('replaces a group with PUT', async () => {
    const a = await user('g-put-a');
    const b = await user('g-put-b');
    const group = (await scim.post('/Groups', { displayName: 'Put me', externalId: 'old', members: [{ value: a.id }] })).body;
    const replaced = await scim.put(`/Groups/${group.id}`, { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Put done', members: [{ value: b.id }] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ displayName: 'Put done', members: [{ value: b.id }] });
    expect(replaced.body).not.toHaveProperty('externalId');
    // The team holds the linked directory users' members.
    const team = await t.http.get(`/v1/teams/${group.id}`).set(...bearer(org.owner.token));
    expect(team.body.item).toMatchObject({ name: 'Put done', memberCount: 1 });
    expect(await teamMemberIds(group.id)).toEqual([await memberOf(b.id)]);
  });

  it("shows a team made through the API with its members' directory users, and changes it through SCIM", async () => {
    const a = await user('g-api-a');
    const b = await user('g-api-b');
    const team = await t.http.post('/v1/teams').set(...bearer(org.owner.token)).send({ name: 'Made through the API' });
    expect(team.status).toBe(201);
    const teamId = team.body.item.id as string;
    // The owner (no directory user) and a's member join through the API.
    for (const memberId of [org.owner.memberId, await memberOf(a.id)]) {
      expect((await t.http.put(`/v1/teams/${teamId}/members/${memberId}`).set(...bearer(org.owner.token))).status).toBeLessThan(300);
    }
    const group = await scim.get(`/Groups/${teamId}`);
    expect(group.status).toBe(200);
    expect(group.body.members).toEqual([{ value: a.id, $ref: expect.stringMatching(new RegExp(`/Users/${a.id}$`)) }]);
    expect((await scim.get('/Groups', { filter: `members[value eq "${a.id}"] and displayName eq "Made through the API"` })).body.totalResults).toBe(1);
    // SCIM changes the same membership: b added, a (added through the API) removed.
    const patched = await scim.patch(`/Groups/${teamId}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: b.id }] }, { op: 'remove', path: `members[value eq "${a.id}"]` }] });
    expect(patched.body.members.map((m: { value: string }) => m.value)).toEqual([b.id]);
    expect((await teamMemberIds(teamId)).sort()).toEqual([org.owner.memberId, await memberOf(b.id)].sort());
    // Taken out of the team through the API, b is out of the Group too.
    expect((await t.http.delete(`/v1/teams/${teamId}/members/${await memberOf(b.id)}`).set(...bearer(org.owner.token))).status).toBe(204);
    expect((await scim.get(`/Groups/${teamId}`)).body.members ?? []).toEqual([]);
    expect((await scim.get('/Groups', { filter: `members[value eq "${b.id}"] and displayName eq "Made through the API"` })).body.totalResults).toBe(0);
  });

  it('holds an unlinked User in the Group, and its member in the team once it links', async () => {
    const unlinked = (await scim.post('/Users', { userName: 'no-address-yet' })).body;
    const group = (await scim.post('/Groups', { displayName: 'Waiting room', members: [{ value: unlinked.id }] })).body;
    expect(group.members.map((m: { value: string }) => m.value)).toEqual([unlinked.id]);
    expect(await teamMemberIds(group.id)).toEqual([]);
    // An address arrives: the directory user links and its member joins the team.
    await scim.patch(`/Users/${unlinked.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'emails', value: [{ value: 'arrived@groups.example', type: 'work' }] }] });
    expect(await teamMemberIds(group.id)).toEqual([await memberOf(unlinked.id)]);
  });
});

describe('plan and audit', () => {
  it('keeps a User past the seat limit unlinked (member_limit), and links it once a seat is free', async () => {
    const seats = await t.db.selectFrom('members').select(t.db.fn.countAll<string>().as('n')).where('organization_id', '=', org.owner.organizationId).where('removed_at', 'is', null).executeTakeFirstOrThrow();
    await t.db.updateTable('plans').set({ max_members: Number(seats.n) }).where('key', '=', 'enterprise').execute();
    let id: string;
    try {
      const res = await scim.post('/Users', { userName: 'over.limit@groups.example' });
      expect(res.status).toBe(201);
      id = res.body.id;
      expect(await t.db.selectFrom('users').select('id').where('email_normalized', '=', 'over.limit@groups.example').execute()).toEqual([]);
      const listed = await t.http.get('/v1/scim/users').set(...bearer(org.owner.token)).query({ linkState: 'unlinked' });
      expect(listed.body.items.find((u: { id: string }) => u.id === id)).toMatchObject({ linkReason: 'member_limit', memberId: null });
    } finally {
      await t.db.updateTable('plans').set({ max_members: null }).where('key', '=', 'enterprise').execute();
    }
    // Retried when it changes.
    await scim.patch(`/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Seated' }] });
    expect(await memberOf(id)).toMatch(/^om_/);
  });

  it('audits each SCIM write as one entry, the SCIM token its actor and its side effects its changes', async () => {
    const written: { action: string; target: string | null; changes: Record<string, unknown> }[][] = [];
    const send = async (request: () => Promise<{ status: number }>) => {
      const { seq } = await t.db.selectFrom('audit_chain_heads').select('seq').where('organization_id', '=', org.owner.organizationId).executeTakeFirstOrThrow();
      expect((await request()).status).toBeLessThan(300);
      const rows = await t.db
        .selectFrom('audit_logs')
        .select(['action', 'actor_type', 'actor_id', 'actor_member_id', 'target_id', 'changes'])
        .where('organization_id', '=', org.owner.organizationId)
        .where('seq', '>', seq)
        .orderBy('seq')
        .execute();
      for (const row of rows) expect({ actor: row.actor_type, id: row.actor_id, member: row.actor_member_id }).toEqual({ actor: 'scim', id: org.tokenId, member: null });
      written.push(rows.map((r) => ({ action: r.action, target: r.target_id, changes: r.changes as Record<string, unknown> })));
    };
    let user!: { id: string };
    await send(async () => {
      const res = await scim.post('/Users', { userName: 'audited@groups.example' });
      user = res.body;
      return res;
    });
    const memberId = await memberOf(user.id);
    await send(() => scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] }));
    // A second directory user with the same address waits unlinked; the deletion links it in its place.
    const sharer = (await scim.post('/Users', { userName: 'audited-twin', emails: [{ value: 'audited@groups.example', type: 'work' }] })).body;
    await send(() => scim.delete(`/Users/${user.id}`));

    expect(written.map((entries) => entries.map((e) => `${e.action} ${e.target}`))).toEqual([
      [`directory_user.provisioned ${user.id}`],
      [`directory_user.suspended ${user.id}`],
      [`directory_user.deleted ${user.id}`],
    ]);
    const [[provisioned], , [removed]] = written;
    expect(provisioned!.changes).toMatchObject({ memberId: { from: null, to: memberId }, member: { from: null, to: { id: memberId, role: 'member', active: true } } });
    const sharerMember = await memberOf(sharer.id);
    expect(sharerMember).toMatch(/^om_/);
    expect(removed!.changes).toMatchObject({
      memberId: { from: memberId, to: null },
      memberRemoved: { from: null, to: memberId },
      relinked: { from: null, to: { directoryUserId: sharer.id, memberId: sharerMember, linkReason: null } },
    });
  });
});

// Last in the file: it moves the shared clock past the fresh-session window.
describe('fresh session', () => {
  it('creating a SCIM token needs a recent sign-in; reauthenticate renews it', async () => {
    (t.clock as ManualClock).advance(16 * 60_000);
    const before = await t.db.selectFrom('scim_tokens').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    const stale = await t.http.post('/v1/scim/tokens').set(...bearer(org.owner.token)).send({ name: 'late' });
    expect([stale.status, stale.body.reason]).toEqual([403, 'fresh_session_required']);
    const after = await t.db.selectFrom('scim_tokens').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    expect(after.n).toEqual(before.n);
    expect((await t.http.post('/v1/auth/reauthenticate').set(...bearer(org.owner.token)).send({ password: PASSWORD })).status).toBe(200);
    expect((await t.http.post('/v1/scim/tokens').set(...bearer(org.owner.token)).send({ name: 'renewed' })).status).toBe(201);
  });
});
