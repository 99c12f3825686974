import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createMarketplace, createOrganization, createPlugin, createTeamDirect, type OrgOwner } from '../support/factories';
import { newId } from '../../src/lib/ids';
import { insertGrants } from '../../src/grants/store';
import { CONNECTOR_INSTANCE, MARKETPLACE, PLUGIN, type GrantedResource } from '../../src/grants/resources';
import type { ManualClock } from '../support/clock';

let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
});
afterAll(() => t.close());

interface Kind {
  label: string;
  resource: GrantedResource;
  base: string;
  grantPrefix: RegExp;
  create(owner: OrgOwner): Promise<string>;
}

const KINDS: Kind[] = [
  { label: 'marketplace', resource: MARKETPLACE, base: '/v1/marketplaces', grantPrefix: /^mag_/, create: async (o) => (await createMarketplace(t, o.token)).id },
  { label: 'plugin', resource: PLUGIN, base: '/v1/plugins', grantPrefix: /^pag_/, create: async (o) => (await createPlugin(t, o.token)).id },
  {
    label: 'connector_instance',
    resource: CONNECTOR_INSTANCE,
    base: '/v1/connector-instances',
    grantPrefix: /^cia_/,
    create: async (o) => {
      const res = await t.http.post('/v1/connector-instances').set(...bearer(o.token)).send({ name: 'Drive', connectorType: 'gdrive' });
      return res.body.item.id;
    },
  },
];

describe.each(KINDS)('$label access grants', (kind) => {
  it('grants to a member (201), updates the same target (200), to a team and org-wide', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await kind.create(owner);
    clock.advance(10);
    const first = await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: member.memberId, role: 'viewer' });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(kind.grantPrefix),
        orgMembershipId: member.memberId,
        teamId: null,
        orgWide: false,
        role: 'viewer',
        createdByOrgMembershipId: owner.memberId,
        createdAt: clock.now().toISOString(),
        removedAt: null,
      },
    });
    const again = await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: member.memberId, role: 'editor' });
    expect(again.status).toBe(200);
    expect(again.body.item).toEqual({ ...first.body.item, role: 'editor' });

    const teamId = await createTeamDirect(t, owner.organizationId, [member.memberId]);
    const team = await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ teamId, role: 'viewer' });
    expect(team.status).toBe(201);
    expect(team.body.item).toMatchObject({ teamId, orgMembershipId: null, orgWide: false });
    const org = await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgWide: true, role: 'viewer' });
    expect(org.status).toBe(201);
    expect(org.body.item).toMatchObject({ teamId: null, orgMembershipId: null, orgWide: true });
    expect((await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgWide: true, role: 'manager' })).status).toBe(200);

    const list = await t.http.get(`${kind.base}/${id}/access`).set(...bearer(owner.token));
    expect(list.status).toBe(200);
    expect(list.body.nextCursor).toBeNull();
    // creator's manager grant + member + team + org-wide (the repeated ones updated in place),
    // written by Postgres as JSON: field for field what the single-grant answers write.
    expect(list.body.items).toHaveLength(4);
    expect(list.body.items).toEqual(expect.arrayContaining([{ ...org.body.item, role: 'manager' }, team.body.item, again.body.item]));
  });

  it('keeps one active grant per target when the same target is granted concurrently', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await kind.create(owner);
    const results = await Promise.all(
      ['viewer', 'editor', 'viewer', 'manager', 'editor'].map((role) =>
        t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: member.memberId, role }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 201]);
    expect(new Set(results.map((r) => r.body.item.id)).size).toBe(1);
    const list = await t.http.get(`${kind.base}/${id}/access`).set(...bearer(owner.token));
    expect(list.body.items.filter((g: { orgMembershipId: string }) => g.orgMembershipId === member.memberId)).toHaveLength(1);
  });

  it('revokes softly and idempotently; the revoked grant stays in the list', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await kind.create(owner);
    const granted = await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: member.memberId, role: 'viewer' });
    clock.advance(1000);
    const revoked = await t.http.delete(`${kind.base}/${id}/access/${granted.body.item.id}`).set(...bearer(owner.token));
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ ok: true, item: { ...granted.body.item, removedAt: clock.now().toISOString() } });
    const firstRemovedAt = clock.now().toISOString();
    clock.advance(1000);
    const twice = await t.http.delete(`${kind.base}/${id}/access/${granted.body.item.id}`).set(...bearer(owner.token));
    expect(twice.status).toBe(200);
    expect(twice.body.item.removedAt).toBe(firstRemovedAt);
    const list = await t.http.get(`${kind.base}/${id}/access`).set(...bearer(owner.token));
    expect(list.body.items.find((g: { id: string }) => g.id === granted.body.item.id)).toEqual(revoked.body.item);
    // After a revoke the same target can be granted again: a new grant.
    const regrant = await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: member.memberId, role: 'viewer' });
    expect(regrant.status).toBe(201);
    expect(regrant.body.item.id).not.toBe(granted.body.item.id);
    // An unknown grant, or one of another resource, is 404.
    const otherId = await kind.create(owner);
    const wrongResource = await t.http.delete(`${kind.base}/${otherId}/access/${granted.body.item.id}`).set(...bearer(owner.token));
    expect(wrongResource.status).toBe(404);
    expect(wrongResource.body.error).toBe('grant_not_found');
  });

  it('validates the target: exactly one, known member or team of this organization', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const id = await kind.create(owner);
    const other = await createOrganization(t, 'Other');
    const otherTeam = await createTeamDirect(t, other.organizationId);
    const post = (body: Record<string, unknown>) => t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send(body);

    for (const body of [{ role: 'viewer' }, { orgMembershipId: member.memberId, orgWide: true, role: 'viewer' }, { orgWide: false, role: 'viewer' }]) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(res.body.details[0].path).toEqual(['body']);
    }
    const badRole = await post({ orgWide: true, role: 'owner' });
    expect(badRole.body.details[0].path).toEqual(['body', 'role']);
    const badMember = await post({ orgMembershipId: 'om_123', role: 'viewer' });
    expect(badMember.body.details[0].path).toEqual(['body', 'orgMembershipId']);
    const wrongPrefix = await post({ teamId: newId('marketplace'), role: 'viewer' });
    expect(wrongPrefix.body.details[0].path).toEqual(['body', 'teamId']);

    for (const memberId of [newId('member'), other.memberId]) {
      const res = await post({ orgMembershipId: memberId, role: 'viewer' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'member_not_found', message: expect.any(String) });
    }
    for (const teamId of [newId('team'), otherTeam]) {
      const res = await post({ teamId, role: 'viewer' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'team_not_found', message: expect.any(String) });
    }
  });

  it('needs manager (403 with a stable reason), hides other organizations (404), needs a session (401)', async () => {
    const owner = await createOrganization(t);
    const viewer = await addMember(t, owner.organizationId);
    const id = await kind.create(owner);
    const granted = await t.http.post(`${kind.base}/${id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: viewer.memberId, role: 'editor' });
    const reason = `${kind.label}_manager_required`;
    for (const req of [
      t.http.get(`${kind.base}/${id}/access`),
      t.http.post(`${kind.base}/${id}/access`).send({ orgWide: true, role: 'viewer' }),
      t.http.delete(`${kind.base}/${id}/access/${granted.body.item.id}`),
    ]) {
      const res = await req.set(...bearer(viewer.token));
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'forbidden', reason, message: expect.any(String) });
    }
    const stranger = await createOrganization(t, 'Other');
    for (const req of [
      t.http.get(`${kind.base}/${id}/access`),
      t.http.post(`${kind.base}/${id}/access`).send({ orgWide: true, role: 'viewer' }),
      t.http.delete(`${kind.base}/${id}/access/${granted.body.item.id}`),
    ]) {
      expect((await req.set(...bearer(stranger.token))).status).toBe(404);
    }
    const list = await t.http.get(`${kind.base}/${id}/access`).set(...bearer(owner.token));
    expect(list.body.items.every((g: { removedAt: string | null; orgWide: boolean }) => g.removedAt === null && !g.orgWide)).toBe(true);
    expect((await t.http.get(`${kind.base}/${id}/access`)).status).toBe(401);
    const badLimit = await t.http.get(`${kind.base}/${id}/access?limit=101`).set(...bearer(owner.token));
    expect(badLimit.body.details[0].path).toEqual(['query', 'limit']);
  });

  it('pages through 250 grants, newest first, each exactly once', async () => {
    const owner = await createOrganization(t);
    const id = await kind.create(owner);
    const start = clock.now().getTime() + 1000;
    // 250 grants: revoked direct grants (no active-target conflict), two share each timestamp.
    await insertGrants(
      t.db,
      kind.resource,
      Array.from({ length: 250 }, (_, i) => ({
        id: newId(kind.resource.grantIdKind),
        organizationId: owner.organizationId,
        resourceId: id,
        target: { memberId: owner.memberId },
        role: 'viewer' as const,
        createdByMemberId: owner.memberId,
        now: new Date(start + Math.floor(i / 2)),
        removedAt: new Date(start + 500),
      })),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let lastKey = '~';
    do {
      const url: string = `${kind.base}/${id}/access?limit=30${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await t.http.get(url).set(...bearer(owner.token));
      expect(res.status).toBe(200);
      for (const g of res.body.items as { id: string; createdAt: string }[]) {
        const key = `${g.createdAt}|${g.id}`;
        expect(key < lastKey).toBe(true);
        lastKey = key;
        seen.push(g.id);
      }
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toHaveLength(251);
    expect(new Set(seen).size).toBe(251);
    expect(pages).toBe(9);
    // A cursor of another list is refused (the organization has the built-in marketplace and one more).
    await createMarketplace(t, owner.token);
    const marketplaces = await t.http.get('/v1/marketplaces?limit=1').set(...bearer(owner.token));
    expect(marketplaces.body.nextCursor).toEqual(expect.any(String));
    const foreignCursor = await t.http.get(`${kind.base}/${id}/access?cursor=${encodeURIComponent(marketplaces.body.nextCursor)}`).set(...bearer(owner.token));
    expect(foreignCursor.status).toBe(400);
    expect(foreignCursor.body.details[0].path).toEqual(['query', 'cursor']);
  });
});

describe('plain grant ids', () => {
  it('answers 404 (not 400) for a malformed connector-instance or plugin grant id', async () => {
    const owner = await createOrganization(t);
    const ci = await KINDS[2]!.create(owner);
    const plugin = await KINDS[1]!.create(owner);
    for (const path of [`/v1/connector-instances/${ci}/access/whatever`, `/v1/plugins/${plugin}/access/mag_x`]) {
      const res = await t.http.delete(path).set(...bearer(owner.token));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('grant_not_found');
    }
    const badMarketGrant = await t.http.delete(`/v1/marketplaces/${newId('marketplace')}/access/${newId('connectorInstanceGrant')}`).set(...bearer(owner.token));
    expect(badMarketGrant.status).toBe(400);
    expect(badMarketGrant.body.details[0].path).toEqual(['path', 'grantId']);
  });
});
