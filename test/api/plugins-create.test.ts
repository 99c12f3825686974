import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';
import { WEBHOOK_TEST_ENV } from '../support/webhooks';

/**
 * POST /v1/plugins without a marketplace writes the plugin, its components, the creator's grants,
 * the audit entry and its event (with its deliveries) in one statement; an organization with more
 * matching webhook endpoints than that statement carries delivery ids for gets the same rows
 * through a transaction.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: WEBHOOK_TEST_ENV });
});
afterAll(() => t.close());

function component(i: number) {
  const kind = ['resource', 'contribution', 'setup', 'lifecycle', 'other'][i % 5]!;
  return { input: { rawSourceText: `# part ${i}`, normalizedPayloadJson: { kind, name: `c${i}`, deep: { list: [i, { x: 'é✓' }] } }, parserMode: 'md', metadata: { index: i } } };
}

async function rowsOf(pluginId: string) {
  const components = await sql<{ id: string; position: number; type: string; input: unknown }>`
    SELECT id, position, type, input FROM plugin_components WHERE plugin_id = ${pluginId} ORDER BY position`.execute(t.db);
  const events = await sql<{ id: string; data: { target: { id: string }; changes: Record<string, unknown> } }>`
    SELECT id, data FROM events WHERE type = 'plugin.created' AND data -> 'target' ->> 'id' = ${pluginId}`.execute(t.db);
  const deliveries = events.rows[0]
    ? await sql<{ endpoint_id: string }>`SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ${events.rows[0].id} ORDER BY endpoint_id`.execute(t.db)
    : { rows: [] };
  const grants = await sql<{ role: string; member_id: string | null; org_wide: boolean }>`
    SELECT role, member_id, org_wide FROM plugin_grants WHERE plugin_id = ${pluginId} ORDER BY role`.execute(t.db);
  return { components: components.rows, events: events.rows, deliveries: deliveries.rows.map((r) => r.endpoint_id), grants: grants.rows };
}

describe('POST /v1/plugins writes everything in one statement', () => {
  it('stores 100 components in order with their ids, the grants, one audit entry and one event; the answer equals a read', async () => {
    const owner = await createOrganization(t, 'Statement');
    const components = Array.from({ length: 100 }, (_, i) => component(i));
    const res = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'Big', description: 'Many parts', components, orgWide: true });
    expect(res.status).toBe(201);
    const id: string = res.body.item.id;

    const rows = await rowsOf(id);
    expect(rows.components.map((c) => c.position)).toEqual(components.map((_, i) => i));
    expect(rows.components.map((c) => c.input)).toEqual(components.map((c) => c.input));
    expect(rows.components.map((c) => c.type)).toEqual(components.map((_, i) => ['resource', 'contribution', 'setup', 'lifecycle', 'resource'][i % 5]));
    // Ids follow the components' order, so the listing (newest first, then id) is the reverse of it.
    const ids = rows.components.map((c) => c.id);
    expect([...ids].sort()).toEqual(ids);
    const page = await t.http.get(`/v1/plugins/${id}/components`).query({ limit: '100' }).set(...bearer(owner.token));
    expect(page.body.items.map((c: { id: string }) => c.id)).toEqual([...ids].reverse());
    expect(rows.grants).toEqual([
      { role: 'manager', member_id: owner.memberId, org_wide: false },
      { role: 'viewer', member_id: null, org_wide: true },
    ]);

    const audit = await t.http.get('/v1/audit-logs').query({ targetId: id }).set(...bearer(owner.token));
    expect(audit.body.items).toHaveLength(1);
    expect(audit.body.items[0]).toMatchObject({ action: 'plugin.created', actor: { type: 'member', memberId: owner.memberId }, target: { type: 'plugin', id } });
    expect(audit.body.items[0].changes).toEqual({
      name: { from: null, to: 'Big' },
      description: { from: null, to: 'Many parts' },
      orgWide: { from: null, to: true },
      componentTypes: { from: null, to: rows.components.map((c) => c.type) },
    });
    expect(rows.events).toHaveLength(1);
    expect(rows.events[0]!.data).toEqual({ target: { type: 'plugin', id }, changes: audit.body.items[0].changes });
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true, firstBrokenId: null });

    const read = await t.http.get(`/v1/plugins/${id}`).set(...bearer(owner.token));
    expect(read.body).toEqual(res.body);
  });

  it('keeps the audit chain whole when an organization creates plugins at once', async () => {
    const owner = await createOrganization(t, 'Together');
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: `P${i}`, components: [component(i)] })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
    const verify = await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token));
    expect(verify.body).toMatchObject({ ok: true, firstBrokenId: null });
    const audit = await t.http.get('/v1/audit-logs').query({ action: 'plugin.created' }).set(...bearer(owner.token));
    expect(audit.body.items).toHaveLength(6);
  });

  it('queues a delivery for every matching endpoint, also beyond the ids the statement carries (then in a transaction)', async () => {
    const owner = await createOrganization(t, 'Fan-out');
    const endpoint = async (i: number, events: string[]) => {
      const res = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: `https://hooks.example.test/${i}`, events });
      expect(res.status).toBe(201);
      return res.body.item.id as string;
    };
    const endpoints: string[] = [];
    for (let i = 0; i < 8; i++) endpoints.push(await endpoint(i, i % 2 ? ['plugin.*'] : ['*']));
    await endpoint(99, ['team.*']); // does not match

    const eight = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'Eight', components: [component(0), component(1)] });
    expect(eight.status).toBe(201);
    const atEight = await rowsOf(eight.body.item.id);
    expect(atEight.deliveries).toEqual([...endpoints].sort());
    expect(atEight.components).toHaveLength(2);

    endpoints.push(await endpoint(8, ['plugin.created']), await endpoint(9, ['*']));
    const ten = await t.http.post('/v1/plugins').set(...bearer(owner.token)).send({ name: 'Ten', components: [component(0), component(1), component(2)] });
    expect(ten.status).toBe(201);
    const atTen = await rowsOf(ten.body.item.id);
    expect(atTen.deliveries).toEqual([...endpoints].sort());
    expect(atTen.events).toHaveLength(1);
    expect(atTen.components.map((c) => c.position)).toEqual([0, 1, 2]);
    expect(atTen.grants).toHaveLength(1);
    const audit = await t.http.get('/v1/audit-logs').query({ targetId: ten.body.item.id }).set(...bearer(owner.token));
    expect(audit.body.items).toHaveLength(1);
    const plugins = await sql<{ n: string }>`SELECT count(*) AS n FROM plugins WHERE organization_id = ${owner.organizationId} AND name = 'Ten'`.execute(t.db);
    expect(Number(plugins.rows[0]!.n)).toBe(1);
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true, firstBrokenId: null });
  });
});
