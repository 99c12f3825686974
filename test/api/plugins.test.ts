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

function component(i: number, kind = 'resource') {
  return {
    input: {
      rawSourceText: `source ${i}`,
      normalizedPayloadJson: { kind, name: `c${i}`, nested: { list: [1, 2, { deep: true }] } },
      parserMode: 'strict',
      schemaVersion: '1',
      metadata: { index: i, unicode: 'é✓' },
    },
  };
}

/** Rows an organization holds in the plugin tables (custom ones: the built-ins are left out). */
async function counts(organizationId: string) {
  const count = async (table: 'plugins' | 'plugin_components' | 'plugin_grants' | 'marketplace_plugins') => {
    const row = await t.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  return { plugins: await count('plugins'), components: await count('plugin_components'), grants: await count('plugin_grants'), memberships: await count('marketplace_plugins') };
}

describe('POST /v1/plugins', () => {
  it('creates a plugin with components, an org-wide grant and a marketplace membership', async () => {
    const owner = await createOrganization(t);
    const m = await createMarketplace(t, owner.token, { name: 'Shelf' });
    const components = [component(0, 'resource'), component(1, 'contribution'), component(2, 'setup'), component(3, 'lifecycle'), component(4, 'other')];
    const res = await t.http
      .post('/v1/plugins')
      .set(...bearer(owner.token))
      .send({ name: 'Deploy helper', description: 'Deploys things', components, orgWide: true, marketplaceId: m.id });
    expect(res.status).toBe(201);
    const id = res.body.item.id;
    const now = clock.now().toISOString();
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(/^plg_/),
        organizationId: owner.organizationId,
        name: 'Deploy helper',
        description: 'Deploys things',
        status: 'active',
        createdByOrgMembershipId: owner.memberId,
        createdAt: now,
        updatedAt: now,
        deletedAt: null,
        memberCount: 5,
        marketplaces: [{ id: m.id, name: 'Shelf' }],
        extension: {
          id,
          name: 'Deploy helper',
          description: 'Deploys things',
          sourceFormat: 'custom',
          manifest: {
            schemaVersion: 1,
            id,
            name: 'Deploy helper',
            description: 'Deploys things',
            source: { format: 'custom', trusted: false, origin: 'organization', reference: `plugin:${id}` },
            resources: [components[0]!.input.normalizedPayloadJson, components[4]!.input.normalizedPayloadJson],
            contributions: [components[1]!.input.normalizedPayloadJson],
            setup: components[2]!.input.normalizedPayloadJson,
            lifecycle: components[3]!.input.normalizedPayloadJson,
          },
        },
      },
    });
    // Reading it back gives the same item; the component inputs are kept verbatim.
    const got = await t.http.get(`/v1/plugins/${id}`).set(...bearer(owner.token));
    expect(got.body).toEqual(res.body);
    const listed = await t.http.get(`/v1/plugins/${id}/components?limit=100`).set(...bearer(owner.token));
    expect(listed.body.items.map((c: { input: unknown }) => c.input).sort((a: any, b: any) => a.metadata.index - b.metadata.index)).toEqual(components.map((c) => c.input));
    expect(listed.body.items[0]).toEqual({ id: expect.stringMatching(/^cob_/), type: expect.any(String), input: expect.any(Object), createdAt: now });
    const grants = await t.http.get(`/v1/plugins/${id}/access`).set(...bearer(owner.token));
    expect(grants.body.items.map((g: { role: string; orgWide: boolean }) => [g.role, g.orgWide]).sort()).toEqual([
      ['manager', false],
      ['viewer', true],
    ]);
  });

  it('accepts 100 components and refuses 101, a 256-character name, unknown fields', async () => {
    const owner = await createOrganization(t);
    const hundred = Array.from({ length: 100 }, (_, i) => component(i));
    const ok = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'Big', components: hundred });
    expect(ok.status).toBe(201);
    expect(ok.body.item.memberCount).toBe(100);
    const before = await counts(owner.organizationId);

    const tooMany = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'Bigger', components: [...hundred, component(100)] });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toBe('invalid_request');
    expect(tooMany.body.details[0].path).toEqual(['body', 'components']);
    const long = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'n'.repeat(256) });
    expect(long.status).toBe(400);
    expect(long.body.details[0].path).toEqual(['body', 'name']);
    expect((await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'n'.repeat(255) })).status).toBe(201);
    const empty = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: '' });
    expect(empty.body.details[0].path).toEqual(['body', 'name']);
    const extra = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'x', components: [{ input: { nope: 1 } }] });
    expect(extra.status).toBe(400);
    expect(extra.body.details[0].path).toEqual(['body', 'components', '0', 'input', 'nope']);
    const badMarket = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'x', marketplaceId: 'mkt_short' });
    expect(badMarket.body.details[0].path).toEqual(['body', 'marketplaceId']);
    const wrongPrefix = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'x', marketplaceId: newId('connectorInstance') });
    expect(wrongPrefix.body.details[0].path).toEqual(['body', 'marketplaceId']);
    expect((await counts(owner.organizationId)).plugins).toBe(before.plugins + 1);
  });

  it('needs admin for orgWide (403 org_admin_required) and 401 without a session', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const res = await t.http.post('/v1/plugins').set(...bearer(member.token)).send({ name: 'x', orgWide: true });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'forbidden', reason: 'org_admin_required', message: expect.any(String) });
    expect((await t.http.post('/v1/plugins').send({ name: 'x' })).status).toBe(401);
    // A plain member may create a private plugin and becomes its manager.
    const own = await t.http.post('/v1/plugins').set(...bearer(member.token)).send({ name: 'mine' });
    expect(own.status).toBe(201);
    expect((await t.http.post(`/v1/plugins/${own.body.item.id}/archive`).set(...bearer(member.token))).status).toBe(200);
  });

  it('writes nothing when the last step fails (archived, deleted, foreign or non-editable marketplace)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const archived = await createMarketplace(t, owner.token, { name: 'Archived' });
    await t.http.post(`/v1/marketplaces/${archived.id}/archive`).set(...bearer(owner.token));
    const deleted = await createMarketplace(t, owner.token, { name: 'Deleted' });
    await t.http.post(`/v1/marketplaces/${deleted.id}/delete`).set(...bearer(owner.token));
    const other = await createOrganization(t, 'Other');
    const foreign = await createMarketplace(t, other.token);
    const readOnly = await createMarketplace(t, owner.token, { name: 'Read only' });
    await t.http.post(`/v1/marketplaces/${readOnly.id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: member.memberId, role: 'viewer' });
    const hundred = Array.from({ length: 100 }, (_, i) => component(i));
    const before = await counts(owner.organizationId);

    for (const marketplaceId of [archived.id, deleted.id, foreign.id, newId('marketplace')]) {
      const res = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'x', components: hundred, orgWide: true, marketplaceId });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'marketplace_not_found', message: expect.any(String) });
    }
    const denied = await t.http.post('/v1/plugins').set(...bearer(member.token)).send({ name: 'x', components: hundred, marketplaceId: readOnly.id });
    expect(denied.status).toBe(403);
    expect(denied.body.reason).toBe('marketplace_editor_required');
    expect(await counts(owner.organizationId)).toEqual(before);
  });
});

describe('plugin reads and changes', () => {
  it('lists visible plugins with q and status filters, newest first, paged', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    clock.advance(10);
    const a = await createPlugin(t, owner.token, { name: 'Alpha tool' });
    clock.advance(10);
    const b = await createPlugin(t, owner.token, { name: 'Beta tool', orgWide: true });
    clock.advance(10);
    const mine = await createPlugin(t, member.token, { name: 'Gamma tool' });
    const all = await t.http.get('/v1/plugins?q=TOOL').set(...bearer(owner.token));
    expect(all.body.items.map((p: { id: string }) => p.id)).toEqual([mine.id, b.id, a.id]);
    const page1 = await t.http.get('/v1/plugins?q=tool&limit=2').set(...bearer(owner.token));
    expect(page1.body.items).toHaveLength(2);
    const page2 = await t.http.get(`/v1/plugins?q=tool&limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`).set(...bearer(owner.token));
    expect(page2.body).toEqual({ items: [expect.objectContaining({ id: a.id })], nextCursor: null });
    // The member sees their own, the org-wide one and the built-ins (through the built-in marketplace).
    const seen = await t.http.get('/v1/plugins?q=tool').set(...bearer(member.token));
    expect(seen.body.items.map((p: { id: string }) => p.id)).toEqual([mine.id, b.id]);
    expect((await t.http.get('/v1/plugins').set(...bearer(member.token))).body.items).toHaveLength(5);
    await t.http.post(`/v1/plugins/${a.id}/archive`).set(...bearer(owner.token));
    const archived = await t.http.get('/v1/plugins?status=archived').set(...bearer(owner.token));
    expect(archived.body.items.map((p: { id: string }) => p.id)).toEqual([a.id]);
    const forged = await t.http.get('/v1/plugins?cursor=forged.cursor').set(...bearer(owner.token));
    expect(forged.status).toBe(400);
    expect(forged.body.details[0].path).toEqual(['query', 'cursor']);
    const badStatus = await t.http.get('/v1/plugins?status=gone').set(...bearer(owner.token));
    expect(badStatus.body.details[0].path).toEqual(['query', 'status']);
  });

  it('patches (editor), archives and restores (manager) with stable reasons', async () => {
    const owner = await createOrganization(t);
    const viewer = await addMember(t, owner.organizationId);
    const editor = await addMember(t, owner.organizationId);
    const p = await createPlugin(t, owner.token);
    await t.http.post(`/v1/plugins/${p.id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: viewer.memberId, role: 'viewer' });
    await t.http.post(`/v1/plugins/${p.id}/access`).set(...bearer(owner.token)).send({ orgMembershipId: editor.memberId, role: 'editor' });
    expect((await t.http.get(`/v1/plugins/${p.id}`).set(...bearer(viewer.token))).status).toBe(200);
    const denied = await t.http.patch(`/v1/plugins/${p.id}`).set(...bearer(viewer.token)).send({ name: 'x' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'forbidden', reason: 'plugin_editor_required', message: expect.any(String) });
    clock.advance(1000);
    const patched = await t.http.patch(`/v1/plugins/${p.id}`).set(...bearer(editor.token)).send({ name: 'Renamed', description: 'Better' });
    expect(patched.status).toBe(200);
    expect(patched.body.item).toMatchObject({ name: 'Renamed', description: 'Better', updatedAt: clock.now().toISOString(), createdAt: ISO });
    expect(patched.body.item.extension.manifest.name).toBe('Renamed');
    const noArchive = await t.http.post(`/v1/plugins/${p.id}/archive`).set(...bearer(editor.token));
    expect(noArchive.status).toBe(403);
    expect(noArchive.body.reason).toBe('plugin_manager_required');
    const archived = await t.http.post(`/v1/plugins/${p.id}/archive`).set(...bearer(owner.token));
    expect(archived.body.item.status).toBe('archived');
    const restored = await t.http.post(`/v1/plugins/${p.id}/restore`).set(...bearer(owner.token));
    expect(restored.body.item.status).toBe('active');
    const bad = await t.http.patch(`/v1/plugins/${p.id}`).set(...bearer(owner.token)).send({ name: 'n'.repeat(256) });
    expect(bad.body.details[0].path).toEqual(['body', 'name']);
  });

  it('answers 404 for another organization, an unknown or malformed plugin id, and 401 without a session', async () => {
    const owner = await createOrganization(t);
    const p = await createPlugin(t, owner.token);
    const stranger = await createOrganization(t, 'Other');
    for (const req of [
      t.http.get(`/v1/plugins/${p.id}`),
      t.http.patch(`/v1/plugins/${p.id}`).send({ name: 'stolen' }),
      t.http.post(`/v1/plugins/${p.id}/archive`),
      t.http.get(`/v1/plugins/${p.id}/components`),
      t.http.get(`/v1/plugins/${p.id}/access`),
    ]) {
      const res = await req.set(...bearer(stranger.token));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('plugin_not_found');
    }
    const still = await t.http.get(`/v1/plugins/${p.id}`).set(...bearer(owner.token));
    expect(still.body.item).toMatchObject({ name: 'Helper', status: 'active' });
    for (const id of ['nope', newId('plugin'), 'plg_!!']) {
      expect((await t.http.get(`/v1/plugins/${encodeURIComponent(id)}`).set(...bearer(owner.token))).status).toBe(404);
    }
    expect((await t.http.get(`/v1/plugins/${p.id}`)).status).toBe(401);
    expect((await t.http.get('/v1/plugins')).status).toBe(401);
  });
});
