import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createMarketplace, createOrganization, createPlugin, createTeamDirect } from '../support/factories';
import { resolveResourceRole } from '../../src/access/resource-roles';
import { MARKETPLACE, PLUGIN } from '../../src/grants/resources';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function grant(token: string, base: string, id: string, body: Record<string, unknown>) {
  const res = await t.http.post(`${base}/${id}/access`).set(...bearer(token)).send(body);
  expect([200, 201]).toContain(res.status);
  return res.body.item as { id: string };
}

describe('resolveResourceRole', () => {
  it('takes the highest of direct, team and org-wide grants', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    const who = { organizationId: owner.organizationId, memberId: member.memberId };
    const role = () => resolveResourceRole(t.db, MARKETPLACE.ref, who, m.id);

    expect(await role()).toBeNull();
    await grant(owner.token, '/v1/marketplaces', m.id, { orgMembershipId: member.memberId, role: 'viewer' });
    expect(await role()).toBe('viewer');
    const teamId = await createTeamDirect(t, owner.organizationId, [member.memberId]);
    const teamGrant = await grant(owner.token, '/v1/marketplaces', m.id, { teamId, role: 'editor' });
    expect(await role()).toBe('editor');
    const orgGrant = await grant(owner.token, '/v1/marketplaces', m.id, { orgWide: true, role: 'manager' });
    expect(await role()).toBe('manager');

    // A revoked grant no longer counts.
    await t.http.delete(`/v1/marketplaces/${m.id}/access/${orgGrant.id}`).set(...bearer(owner.token));
    expect(await role()).toBe('editor');
    await t.http.delete(`/v1/marketplaces/${m.id}/access/${teamGrant.id}`).set(...bearer(owner.token));
    expect(await role()).toBe('viewer');
  });

  it('reaches a member through a team only while they are in it', async () => {
    const owner = await createOrganization(t);
    const inTeam = await addMember(t, owner.organizationId);
    const outside = await addMember(t, owner.organizationId);
    const p = await createPlugin(t, owner.token);
    const teamId = await createTeamDirect(t, owner.organizationId, [inTeam.memberId]);
    await grant(owner.token, '/v1/plugins', p.id, { teamId, role: 'editor' });
    expect(await resolveResourceRole(t.db, PLUGIN.ref, { organizationId: owner.organizationId, memberId: inTeam.memberId }, p.id)).toBe('editor');
    expect(await resolveResourceRole(t.db, PLUGIN.ref, { organizationId: owner.organizationId, memberId: outside.memberId }, p.id)).toBeNull();
    // Through HTTP too: the team member may rename, the other member may not even view.
    expect((await t.http.patch(`/v1/plugins/${p.id}`).set(...bearer(inTeam.token)).send({ name: 'By the team' })).status).toBe(200);
    const denied = await t.http.get(`/v1/plugins/${p.id}`).set(...bearer(outside.token));
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('plugin_viewer_required');
    await t.db.deleteFrom('team_members').where('team_id', '=', teamId).execute();
    expect(await resolveResourceRole(t.db, PLUGIN.ref, { organizationId: owner.organizationId, memberId: inTeam.memberId }, p.id)).toBeNull();
  });

  it('makes admins manager everywhere and gives removed members nothing', async () => {
    const owner = await createOrganization(t);
    const admin = await addMember(t, owner.organizationId, 'admin');
    const member = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    await grant(owner.token, '/v1/marketplaces', m.id, { orgWide: true, role: 'viewer' });
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, { organizationId: owner.organizationId, memberId: admin.memberId }, m.id)).toBe('manager');
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, { organizationId: owner.organizationId, memberId: member.memberId }, m.id)).toBe('viewer');
    await t.db.updateTable('members').set({ removed_at: t.clock.now() }).where('id', '=', member.memberId).execute();
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, { organizationId: owner.organizationId, memberId: member.memberId }, m.id)).toBeNull();
    // Another organization's member is reached by nothing, not even an org-wide grant.
    const stranger = await createOrganization(t, 'Other');
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, { organizationId: owner.organizationId, memberId: stranger.memberId }, m.id)).toBeNull();
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, { organizationId: stranger.organizationId, memberId: stranger.memberId }, m.id)).toBe('manager');
  });

  it('gives nothing through an archived marketplace until it is restored', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    const p = await createPlugin(t, owner.token, { marketplaceId: m.id });
    await grant(owner.token, '/v1/marketplaces', m.id, { orgMembershipId: member.memberId, role: 'editor' });
    const who = { organizationId: owner.organizationId, memberId: member.memberId };
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, who, m.id)).toBe('editor');
    // The plugin is visible through the marketplace.
    expect((await t.http.get(`/v1/plugins/${p.id}`).set(...bearer(member.token))).status).toBe(200);

    await t.http.post(`/v1/marketplaces/${m.id}/archive`).set(...bearer(owner.token));
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, who, m.id)).toBeNull();
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, who, m.id, { includeSuspended: true })).toBe('editor');
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, { organizationId: owner.organizationId, memberId: owner.memberId }, m.id)).toBe('manager');
    expect((await t.http.get(`/v1/plugins/${p.id}`).set(...bearer(member.token))).status).toBe(403);
    expect((await t.http.get('/v1/plugins').set(...bearer(member.token))).body.items.map((x: { id: string }) => x.id)).not.toContain(p.id);

    await t.http.post(`/v1/marketplaces/${m.id}/restore`).set(...bearer(owner.token));
    expect(await resolveResourceRole(t.db, MARKETPLACE.ref, who, m.id)).toBe('editor');
    expect((await t.http.get(`/v1/plugins/${p.id}`).set(...bearer(member.token))).status).toBe(200);
  });

  it('lets a manager by grant restore an archived marketplace', async () => {
    const owner = await createOrganization(t);
    const manager = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    await grant(owner.token, '/v1/marketplaces', m.id, { orgMembershipId: manager.memberId, role: 'manager' });
    expect((await t.http.post(`/v1/marketplaces/${m.id}/archive`).set(...bearer(manager.token))).status).toBe(200);
    const restored = await t.http.post(`/v1/marketplaces/${m.id}/restore`).set(...bearer(manager.token));
    expect(restored.status).toBe(200);
    expect(restored.body.item.status).toBe('active');
  });
});
