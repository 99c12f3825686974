import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createMarketplace, createOrganization, createPlugin } from '../support/factories';
import { newId } from '../../src/lib/ids';
import type { ManualClock } from '../support/clock';

let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
});
afterAll(() => t.close());

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

async function builtinMarketplace(token: string) {
  const res = await t.http.get('/v1/marketplaces').set(...bearer(token));
  expect(res.status).toBe(200);
  return res.body.items.find((m: { name: string }) => m.name === 'Built-in plugins');
}

async function grant(token: string, marketplaceId: string, body: Record<string, unknown>) {
  return t.http.post(`/v1/marketplaces/${marketplaceId}/access`).set(...bearer(token)).send(body);
}

describe('built-in marketplace', () => {
  it('is provisioned with the built-in plugins and visible to every member', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const builtin = await builtinMarketplace(member.token);
    expect(builtin).toEqual({
      id: expect.stringMatching(/^mkt_/),
      organizationId: owner.organizationId,
      name: 'Built-in plugins',
      description: expect.any(String),
      logoUrl: null,
      status: 'active',
      createdByOrgMembershipId: null,
      createdAt: ISO,
      updatedAt: ISO,
      deletedAt: null,
      pluginCount: 3,
    });
    const plugins = await t.http.get(`/v1/marketplaces/${builtin.id}/plugins`).set(...bearer(member.token));
    expect(plugins.status).toBe(200);
    expect(plugins.body.items).toHaveLength(3);
    for (const plugin of plugins.body.items) {
      expect(plugin.extension.sourceFormat).toBe('product-builtin');
      expect(plugin.extension.manifest.source).toEqual({ format: 'product-builtin', trusted: true, origin: 'builtin', reference: expect.stringMatching(/^builtin\//) });
      expect(plugin.marketplaces).toEqual([{ id: builtin.id, name: 'Built-in plugins' }]);
      expect(plugin.memberCount).toBeGreaterThan(0);
    }
  });

  it('cannot be deleted (409) but can be archived', async () => {
    const owner = await createOrganization(t);
    const builtin = await builtinMarketplace(owner.token);
    const del = await t.http.post(`/v1/marketplaces/${builtin.id}/delete`).set(...bearer(owner.token));
    expect(del.status).toBe(409);
    expect(del.body).toEqual({ error: 'managed_marketplace_cannot_be_deleted', message: expect.any(String) });
    const archive = await t.http.post(`/v1/marketplaces/${builtin.id}/archive`).set(...bearer(owner.token));
    expect(archive.status).toBe(200);
    expect(archive.body.item.status).toBe('archived');
  });
});

describe('POST /v1/marketplaces and GET', () => {
  it('creates a custom marketplace for an admin; the creator gets a manager grant', async () => {
    const owner = await createOrganization(t);
    const res = await t.http.post('/v1/marketplaces').set(...bearer(owner.token)).send({ name: 'Tools', description: 'd', logoUrl: 'https://x.test/l.png' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(/^mkt_[0-7][0-9a-z]{25}$/),
        organizationId: owner.organizationId,
        name: 'Tools',
        description: 'd',
        logoUrl: 'https://x.test/l.png',
        status: 'active',
        createdByOrgMembershipId: owner.memberId,
        createdAt: clock.now().toISOString(),
        updatedAt: clock.now().toISOString(),
        deletedAt: null,
        pluginCount: 0,
      },
    });
    const access = await t.http.get(`/v1/marketplaces/${res.body.item.id}/access`).set(...bearer(owner.token));
    expect(access.body.items).toEqual([expect.objectContaining({ orgMembershipId: owner.memberId, role: 'manager', removedAt: null })]);
    const got = await t.http.get(`/v1/marketplaces/${res.body.item.id}`).set(...bearer(owner.token));
    expect(got.body).toEqual(res.body);
  });

  it('refuses a plain member (403 org_admin_required), no session (401), bad bodies (400)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const denied = await t.http.post('/v1/marketplaces').set(...bearer(member.token)).send({ name: 'x' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'forbidden', reason: 'org_admin_required', message: expect.any(String) });
    expect((await t.http.post('/v1/marketplaces').send({ name: 'x' })).status).toBe(401);
    const long = await t.http.post('/v1/marketplaces').set(...bearer(owner.token)).send({ name: 'n'.repeat(256) });
    expect(long.status).toBe(400);
    expect(long.body.details[0].path).toEqual(['body', 'name']);
    const extra = await t.http.post('/v1/marketplaces').set(...bearer(owner.token)).send({ name: 'x', status: 'archived' });
    expect(extra.body.details[0].path).toEqual(['body', 'status']);
  });

  it('lists only what a plain member can see, filtered by q, paged', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const visible = await createMarketplace(t, owner.token, { name: 'Visible one' });
    clock.advance(10);
    await createMarketplace(t, owner.token, { name: 'Hidden one' });
    expect((await grant(owner.token, visible.id, { orgMembershipId: member.memberId, role: 'viewer' })).status).toBe(201);
    const mine = await t.http.get('/v1/marketplaces').set(...bearer(member.token));
    expect(mine.body.items.map((m: { name: string }) => m.name).sort()).toEqual(['Built-in plugins', 'Visible one']);
    const all = await t.http.get('/v1/marketplaces?q=ONE&limit=1').set(...bearer(owner.token));
    expect(all.body.items.map((m: { name: string }) => m.name)).toEqual(['Hidden one']);
    const next = await t.http.get(`/v1/marketplaces?q=ONE&limit=1&cursor=${encodeURIComponent(all.body.nextCursor)}`).set(...bearer(owner.token));
    expect(next.body).toEqual({ items: [expect.objectContaining({ name: 'Visible one' })], nextCursor: null });
    const bad = await t.http.get('/v1/marketplaces?limit=0').set(...bearer(owner.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['query', 'limit']);
  });
});

describe('logoUrl', () => {
  const refused = [
    ['javascript:alert(document.cookie)', /https/],
    ['data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=', /https/],
    ['file:///etc/passwd', /https/],
    ['http://logos.example.com/l.png', /https/],
    ['https://user:secret@logos.example.com/l.png', /credentials/],
    ['https://token@logos.example.com/l.png', /credentials/],
    ['//logos.example.com/l.png', /absolute URL/],
  ] as const;

  it.each(refused)('%s is refused on create and update, naming the field; nothing changes', async (logoUrl, message) => {
    const owner = await createOrganization(t);
    const created = await t.http.post('/v1/marketplaces').set(...bearer(owner.token)).send({ name: 'Logo', logoUrl });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'logoUrl'], message: expect.stringMatching(message) }] });
    const m = await createMarketplace(t, owner.token, { logoUrl: 'https://logos.example.com/ok.png' });
    const updated = await t.http.patch(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token)).send({ logoUrl });
    expect(updated.status).toBe(400);
    expect(updated.body.details).toEqual([{ path: ['body', 'logoUrl'], message: expect.stringMatching(message) }]);
    const read = await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token));
    expect(read.body.item.logoUrl).toBe('https://logos.example.com/ok.png');
  });

  it('http is accepted for an address inside OUTBOUND_ALLOWED_NETWORKS', async () => {
    // A second app on the same database, with the setting (closing it leaves the database to `t`).
    const local = await createTestApp({ database: t.database, clock, env: { OUTBOUND_ALLOWED_NETWORKS: '10.0.0.0/8' } });
    const owner = await createOrganization(local);
    const res = await local.http.post('/v1/marketplaces').set(...bearer(owner.token)).send({ name: 'Intranet', logoUrl: 'http://10.1.2.3/logo.png' });
    expect(res.status).toBe(201);
    expect(res.body.item.logoUrl).toBe('http://10.1.2.3/logo.png');
    await local.close();
  });
});

describe('PATCH /v1/marketplaces/{marketplaceId}', () => {
  it('updates metadata and answers Marketplace without status', async () => {
    const owner = await createOrganization(t);
    const m = await createMarketplace(t, owner.token);
    clock.advance(1000);
    const res = await t.http.patch(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token)).send({ name: 'Renamed', description: 'new', logoUrl: 'https://l.test/a.png' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: m.id,
        organizationId: owner.organizationId,
        name: 'Renamed',
        description: 'new',
        logoUrl: 'https://l.test/a.png',
        createdByOrgMembershipId: owner.memberId,
        createdAt: ISO,
        updatedAt: clock.now().toISOString(),
        deletedAt: null,
        pluginCount: 0,
      },
    });
  });

  it('answers 403 with the {reason, message} variant, 404 across tenants, 400 for bad ids and bodies', async () => {
    const owner = await createOrganization(t);
    const viewer = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    await grant(owner.token, m.id, { orgMembershipId: viewer.memberId, role: 'viewer' });
    const denied = await t.http.patch(`/v1/marketplaces/${m.id}`).set(...bearer(viewer.token)).send({ name: 'x' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ reason: 'marketplace_editor_required', message: expect.any(String) });

    const stranger = await createOrganization(t, 'Other');
    const cross = await t.http.patch(`/v1/marketplaces/${m.id}`).set(...bearer(stranger.token)).send({ name: 'stolen' });
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('marketplace_not_found');
    expect((await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token))).body.item.name).toBe('Team tools');

    const unknown = await t.http.patch(`/v1/marketplaces/${newId('marketplace')}`).set(...bearer(owner.token)).send({ name: 'x' });
    expect(unknown.status).toBe(404);
    for (const badId of [newId('plugin'), `${m.id}x`, m.id.slice(0, 29), 'mkt_UPPERCASEUPPERCASEUPPERCA']) {
      const bad = await t.http.patch(`/v1/marketplaces/${badId}`).set(...bearer(owner.token)).send({ name: 'x' });
      expect(bad.status).toBe(400);
      expect(bad.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(['path', 'marketplaceId']);
    }
    const empty = await t.http.patch(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token)).send({});
    expect(empty.status).toBe(400);
    const long = await t.http.patch(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token)).send({ name: 'n'.repeat(256) });
    expect(long.body.details[0].path).toEqual(['body', 'name']);
    expect((await t.http.patch(`/v1/marketplaces/${m.id}`).send({ name: 'x' })).status).toBe(401);
  });
});

describe('archive and restore', () => {
  it('archives (plugins, memberships, grants untouched), suspends access, and restores', async () => {
    const owner = await createOrganization(t);
    const viewer = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    const plugin = await createPlugin(t, owner.token, { marketplaceId: m.id });
    await grant(owner.token, m.id, { orgMembershipId: viewer.memberId, role: 'viewer' });
    expect((await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(viewer.token))).status).toBe(200);

    const denied = await t.http.post(`/v1/marketplaces/${m.id}/archive`).set(...bearer(viewer.token));
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'forbidden', reason: 'marketplace_manager_required', message: expect.any(String) });

    const res = await t.http.post(`/v1/marketplaces/${m.id}/archive`).set(...bearer(owner.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, item: expect.objectContaining({ id: m.id, status: 'archived', pluginCount: 1, deletedAt: null }) });
    expect(Object.keys(res.body.item).sort()).toEqual(
      ['createdAt', 'createdByOrgMembershipId', 'deletedAt', 'description', 'id', 'logoUrl', 'name', 'organizationId', 'pluginCount', 'status', 'updatedAt'],
    );
    // Access through it is suspended; the plugin and the grants stay.
    expect((await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(viewer.token))).status).toBe(403);
    const p = await t.http.get(`/v1/plugins/${plugin.id}`).set(...bearer(owner.token));
    expect(p.status).toBe(200);
    expect(p.body.item.marketplaces).toEqual([]);
    expect((await t.http.get(`/v1/marketplaces/${m.id}/access`).set(...bearer(owner.token))).body.items).toHaveLength(2);
    // Publishing into an archived marketplace is refused.
    const create = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'late', marketplaceId: m.id });
    expect(create.status).toBe(404);

    const restored = await t.http.post(`/v1/marketplaces/${m.id}/restore`).set(...bearer(owner.token));
    expect(restored.status).toBe(200);
    expect(restored.body.item.status).toBe('active');
    expect((await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(viewer.token))).status).toBe(200);
  });

  it('answers 404 across tenants, 400 for a bad id, 401 without a session', async () => {
    const owner = await createOrganization(t);
    const m = await createMarketplace(t, owner.token);
    const stranger = await createOrganization(t, 'Other');
    expect((await t.http.post(`/v1/marketplaces/${m.id}/archive`).set(...bearer(stranger.token))).status).toBe(404);
    expect((await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token))).body.item.status).toBe('active');
    const bad = await t.http.post('/v1/marketplaces/mkt_123/archive').set(...bearer(owner.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'marketplaceId']);
    expect((await t.http.post(`/v1/marketplaces/${m.id}/archive`)).status).toBe(401);
  });
});

describe('POST /v1/marketplaces/{marketplaceId}/delete', () => {
  it('deletes the marketplace, its memberships and grants in one go; plugins stay', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    const plugin = await createPlugin(t, owner.token, { marketplaceId: m.id });
    await grant(owner.token, m.id, { orgMembershipId: member.memberId, role: 'viewer' });
    clock.advance(5000);
    const res = await t.http.post(`/v1/marketplaces/${m.id}/delete`).set(...bearer(owner.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: m.id,
        organizationId: owner.organizationId,
        name: 'Team tools',
        description: '',
        logoUrl: null,
        createdByOrgMembershipId: owner.memberId,
        createdAt: ISO,
        updatedAt: clock.now().toISOString(),
        deletedAt: clock.now().toISOString(),
        pluginCount: 0,
      },
    });
    expect(res.body.item.status).toBeUndefined();
    for (const table of ['marketplace_plugins', 'marketplace_grants'] as const) {
      const rows = await t.db.selectFrom(table).select('marketplace_id').where('marketplace_id', '=', m.id).execute();
      expect(rows).toEqual([]);
    }
    expect((await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token))).status).toBe(404);
    expect((await t.http.get(`/v1/marketplaces/${m.id}/access`).set(...bearer(owner.token))).status).toBe(404);
    expect((await t.http.post(`/v1/marketplaces/${m.id}/delete`).set(...bearer(owner.token))).status).toBe(404);
    const p = await t.http.get(`/v1/plugins/${plugin.id}`).set(...bearer(owner.token));
    expect(p.status).toBe(200);
    expect(p.body.item.marketplaces).toEqual([]);
  });

  it('answers 403 {reason, message} to a non-manager, 404 across tenants, 400 for a bad id', async () => {
    const owner = await createOrganization(t);
    const editor = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    await grant(owner.token, m.id, { orgMembershipId: editor.memberId, role: 'editor' });
    const denied = await t.http.post(`/v1/marketplaces/${m.id}/delete`).set(...bearer(editor.token));
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ reason: 'marketplace_manager_required', message: expect.any(String) });
    const stranger = await createOrganization(t, 'Other');
    expect((await t.http.post(`/v1/marketplaces/${m.id}/delete`).set(...bearer(stranger.token))).status).toBe(404);
    expect((await t.http.get(`/v1/marketplaces/${m.id}`).set(...bearer(owner.token))).status).toBe(200);
    const bad = await t.http.post(`/v1/marketplaces/${newId('marketplaceGrant')}/delete`).set(...bearer(owner.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'marketplaceId']);
    expect((await t.http.post(`/v1/marketplaces/${m.id}/delete`)).status).toBe(401);
  });
});

describe('marketplace plugins', () => {
  it('publishes (201, then 200), lists and unpublishes a plugin', async () => {
    const owner = await createOrganization(t);
    const m = await createMarketplace(t, owner.token);
    const plugin = await createPlugin(t, owner.token);
    const add = await t.http.post(`/v1/marketplaces/${m.id}/plugins`).set(...bearer(owner.token)).send({ pluginId: plugin.id });
    expect(add.status).toBe(201);
    expect(add.body.item.marketplaces).toEqual([{ id: m.id, name: 'Team tools' }]);
    const again = await t.http.post(`/v1/marketplaces/${m.id}/plugins`).set(...bearer(owner.token)).send({ pluginId: plugin.id });
    expect(again.status).toBe(200);
    const list = await t.http.get(`/v1/marketplaces/${m.id}/plugins`).set(...bearer(owner.token));
    expect(list.body).toEqual({ items: [expect.objectContaining({ id: plugin.id })], nextCursor: null });
    expect((await t.http.delete(`/v1/marketplaces/${m.id}/plugins/${plugin.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.delete(`/v1/marketplaces/${m.id}/plugins/${plugin.id}`).set(...bearer(owner.token))).status).toBe(404);
    const unknown = await t.http.post(`/v1/marketplaces/${m.id}/plugins`).set(...bearer(owner.token)).send({ pluginId: 'nope' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('plugin_not_found');
  });

  it('needs editor on the marketplace', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const m = await createMarketplace(t, owner.token);
    const plugin = await createPlugin(t, member.token);
    const res = await t.http.post(`/v1/marketplaces/${m.id}/plugins`).set(...bearer(member.token)).send({ pluginId: plugin.id });
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('marketplace_editor_required');
  });
});
