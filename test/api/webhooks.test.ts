import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { WEBHOOK_TEST_ENV } from '../support/webhooks';

/** Webhook endpoints CRUD, the once-shown secret, the URL policy, isolation and the events feed. */
describe('webhook endpoints and events', () => {
  let t: TestApp;
  let owner: OrgOwner;

  beforeAll(async () => {
    t = await createTestApp({ env: WEBHOOK_TEST_ENV });
    owner = await createOrganization(t, 'Hooks');
  }, 240_000);
  afterAll(() => t.close());

  const create = (token: string, body: Record<string, unknown>) => t.http.post('/v1/webhooks').set(...bearer(token)).send(body);

  it('creates an endpoint and shows its secret once, stored encrypted', async () => {
    const res = await create(owner.token, { url: 'https://hooks.example.test/in', events: ['member.*', 'team.created'], description: 'CRM' });
    expect(res.status).toBe(201);
    expect(res.body.item).toMatchObject({ url: 'https://hooks.example.test/in', events: ['member.*', 'team.created'], description: 'CRM', enabled: true });
    expect(res.body.item.id).toMatch(/^whk_/);
    const secret: string = res.body.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);

    const got = await t.http.get(`/v1/webhooks/${res.body.item.id}`).set(...bearer(owner.token));
    expect(got.status).toBe(200);
    expect(got.body.item).toEqual(res.body.item);
    expect(JSON.stringify(got.body)).not.toContain(secret.slice(6, 20));
    const list = await t.http.get('/v1/webhooks').set(...bearer(owner.token));
    expect(list.body.items.map((w: { id: string }) => w.id)).toContain(res.body.item.id);
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(6, 20));

    const stored = await t.db.selectFrom('webhook_endpoints').select(['secret_sealed']).where('id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(stored.secret_sealed).not.toContain(secret.slice(6));
    // Nowhere in the database or the logs in plain text (events and audit included).
    const events = await t.db.selectFrom('events').select('data').execute();
    expect(JSON.stringify(events)).not.toContain(secret.slice(6, 20));
    expect(t.logs.join('')).not.toContain(secret.slice(6, 20));
  });

  it('refuses URLs outside the egress policy, naming url', async () => {
    for (const url of ['http://hooks.example.test/in', 'https://user:pw@hooks.example.test/', 'https://10.1.2.3/in', 'https://169.254.169.254/latest', 'https://[::1]/x', 'ftp://x.example.test/']) {
      const res = await create(owner.token, { url, events: ['*'] });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.body.details[0].path).toEqual(['body', 'url']);
    }
    // http is accepted inside OUTBOUND_ALLOWED_NETWORKS (127.0.0.0/8 in these tests).
    expect((await create(owner.token, { url: 'http://127.0.0.1:9/in', events: ['*'] })).status).toBe(201);
  });

  it('validates events filters and other fields', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ url: 'https://a.example.test', events: [] }, ['body', 'events']],
      [{ url: 'https://a.example.test', events: ['Member.Created'] }, ['body', 'events', '0']],
      [{ url: 'https://a.example.test', events: ['member.**'] }, ['body', 'events', '0']],
      [{ url: 'https://a.example.test', events: ['team.created', 'member'] }, ['body', 'events', '1']],
      [{ url: 'https://a.example.test', events: ['member..x'] }, ['body', 'events', '0']],
      [{ url: 'https://a.example.test', events: ['me*'] }, ['body', 'events', '0']],
      [{ url: 'https://a.example.test', events: Array.from({ length: 101 }, (_, i) => `t.e${i}`) }, ['body', 'events']],
      [{ url: 'https://a.example.test', events: ['*'], description: 'x'.repeat(1001) }, ['body', 'description']],
      [{ url: 'https://a.example.test', events: ['*'], secret: 'whsec_x' }, ['body']],
      [{ events: ['*'] }, ['body', 'url']],
    ];
    for (const [body, path] of cases) {
      const res = await create(owner.token, body);
      expect(res.status).toBe(400);
      expect(res.body.details.some((d: { path: string[] }) => path.every((p, i) => d.path[i] === p))).toBe(true);
    }
  });

  it('updates, disables and deletes an endpoint', async () => {
    const { body } = await create(owner.token, { url: 'https://hooks.example.test/u', events: ['*'] });
    const id = body.item.id;
    const patched = await t.http.patch(`/v1/webhooks/${id}`).set(...bearer(owner.token)).send({ events: ['team.*'], enabled: false, description: 'later' });
    expect(patched.status).toBe(200);
    expect(patched.body.item).toMatchObject({ events: ['team.*'], enabled: false, description: 'later' });
    const cleared = await t.http.patch(`/v1/webhooks/${id}`).set(...bearer(owner.token)).send({ description: null });
    expect(cleared.body.item.description).toBeNull();
    expect((await t.http.patch(`/v1/webhooks/${id}`).set(...bearer(owner.token)).send({ url: 'https://192.168.1.1/' })).body.details[0].path).toEqual(['body', 'url']);
    expect((await t.http.patch(`/v1/webhooks/${id}`).set(...bearer(owner.token)).send({})).body.item.description).toBeNull();
    expect((await t.http.delete(`/v1/webhooks/${id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get(`/v1/webhooks/${id}`).set(...bearer(owner.token))).status).toBe(404);
    expect((await t.http.delete(`/v1/webhooks/${id}`).set(...bearer(owner.token))).status).toBe(404);
  });

  it('rotates the secret: a new one, shown once', async () => {
    const { body } = await create(owner.token, { url: 'https://hooks.example.test/r', events: ['*'] });
    const res = await t.http.post(`/v1/webhooks/${body.item.id}/rotate-secret`).set(...bearer(owner.token));
    expect(res.status).toBe(200);
    expect(res.body.secret).toMatch(/^whsec_/);
    expect(res.body.secret).not.toBe(body.secret);
    const row = await t.db.selectFrom('webhook_endpoints').select(['previous_secret_sealed', 'previous_secret_expires_at']).where('id', '=', body.item.id).executeTakeFirstOrThrow();
    expect(row.previous_secret_sealed).not.toBeNull();
    expect(new Date(row.previous_secret_expires_at!).getTime() - t.clock.now().getTime()).toBe(24 * 3_600_000);
  });

  it('needs an admin, and another organization sees 404', async () => {
    const { body } = await create(owner.token, { url: 'https://hooks.example.test/x', events: ['*'] });
    const member = await addMember(t, owner.organizationId, 'member');
    for (const res of [
      await t.http.get('/v1/webhooks').set(...bearer(member.token)),
      await t.http.get('/v1/events').set(...bearer(member.token)),
      await create(member.token, { url: 'https://a.example.test', events: ['*'] }),
      await t.http.post(`/v1/webhooks/${body.item.id}/test`).set(...bearer(member.token)),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.reason).toBe('permission_required');
    }
    const admin = await addMember(t, owner.organizationId, 'admin');
    expect((await t.http.get(`/v1/webhooks/${body.item.id}`).set(...bearer(admin.token))).status).toBe(200);

    const other = await createOrganization(t, 'Other');
    const id = body.item.id;
    for (const res of [
      await t.http.get(`/v1/webhooks/${id}`).set(...bearer(other.token)),
      await t.http.patch(`/v1/webhooks/${id}`).set(...bearer(other.token)).send({ enabled: false }),
      await t.http.delete(`/v1/webhooks/${id}`).set(...bearer(other.token)),
      await t.http.post(`/v1/webhooks/${id}/rotate-secret`).set(...bearer(other.token)),
      await t.http.post(`/v1/webhooks/${id}/test`).set(...bearer(other.token)),
      await t.http.get(`/v1/webhooks/${id}/deliveries`).set(...bearer(other.token)),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('webhook_not_found');
    }
    expect((await t.http.get('/v1/webhooks').set(...bearer(other.token))).body.items).toEqual([]);
    expect((await t.http.get('/v1/events').set(...bearer(other.token))).body.items.some((e: { organizationId: string }) => e.organizationId === owner.organizationId)).toBe(false);
    expect((await t.http.get(`/v1/webhooks/${id}`).set(...bearer(owner.token))).body.item.enabled).toBe(true);
  });

  it('writes an event for each audited change in its transaction, and none for a failed request', async () => {
    const org = await createOrganization(t, 'Outbox');
    const hook = await create(org.token, { url: 'https://hooks.example.test/o', events: ['team.*'] });
    const countEvents = async () => (await t.db.selectFrom('events').select('id').where('organization_id', '=', org.organizationId).execute()).length;
    const countDeliveries = async () => (await t.db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', hook.body.item.id).execute()).length;
    const team = await t.http.post('/v1/teams').set(...bearer(org.token)).send({ name: 'Platform' });
    expect(team.status).toBe(201);
    const [event] = (await t.http.get('/v1/events?type=team.created').set(...bearer(org.token))).body.items;
    expect(event).toMatchObject({ type: 'team.created', organizationId: org.organizationId, data: { target: { type: 'team', id: team.body.item.id }, changes: { name: { from: null, to: 'Platform' } } } });
    // The audit entry and the event are the same change.
    const entry = await t.db.selectFrom('audit_logs').select(['action', 'created_at']).where('target_id', '=', team.body.item.id).executeTakeFirstOrThrow();
    expect(entry.action).toBe('team.created');
    expect(new Date(entry.created_at).toISOString()).toBe(event.createdAt);
    const events = await countEvents();
    const deliveries = await countDeliveries();
    expect(deliveries).toBe(1);

    // Refused before writing (unknown member) and refused by the database mid-transaction (name taken): no event, no delivery.
    expect((await t.http.post('/v1/teams').set(...bearer(org.token)).send({ name: 'Other', memberIds: ['om_01h2xcejqtf2nbrexx3vqjhp41'] })).status).toBe(404);
    expect((await t.http.post('/v1/teams').set(...bearer(org.token)).send({ name: 'platform' })).status).toBe(409);
    expect(await countEvents()).toBe(events);
    expect(await countDeliveries()).toBe(deliveries);
  });

  it('lists events newest first in keyset pages, filtered by exact type or prefix', async () => {
    const org = await createOrganization(t, 'Feed');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(org.token, { url: `https://h.example.test/${i}`, events: ['*'] })).body.item.id);
    await t.http.patch(`/v1/webhooks/${ids[0]}`).set(...bearer(org.token)).send({ description: 'changed' });
    const all = await t.http.get('/v1/events').set(...bearer(org.token));
    expect(all.status).toBe(200);
    expect(all.body.items.map((e: { type: string }) => e.type)).toEqual(['webhook.updated', 'webhook.created', 'webhook.created', 'webhook.created', 'organization.created']);
    expect(all.body.items[0]).toMatchObject({
      id: expect.stringMatching(/^evt_/),
      organizationId: org.organizationId,
      data: { target: { type: 'webhook', id: ids[0] }, changes: { description: { from: null, to: 'changed' } } },
    });
    expect(all.body.items[3].data.target.id).toBe(ids[0]);

    const page1 = await t.http.get('/v1/events?limit=3').set(...bearer(org.token));
    expect(page1.body.items).toHaveLength(3);
    const page2 = await t.http.get(`/v1/events?limit=3&cursor=${encodeURIComponent(page1.body.nextCursor)}`).set(...bearer(org.token));
    expect(page2.body.items).toHaveLength(2);
    expect(page2.body.nextCursor).toBeNull();
    expect([...page1.body.items, ...page2.body.items]).toEqual(all.body.items);

    expect((await t.http.get('/v1/events?type=webhook.created').set(...bearer(org.token))).body.items).toHaveLength(3);
    expect((await t.http.get('/v1/events?type=webhook.*').set(...bearer(org.token))).body.items).toHaveLength(4);
    expect((await t.http.get('/v1/events?type=member.*').set(...bearer(org.token))).body.items).toHaveLength(0);
    expect((await t.http.get('/v1/events?type=*').set(...bearer(org.token))).body.items).toHaveLength(5);
    const bad = await t.http.get('/v1/events?type=WEBHOOK').set(...bearer(org.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['query', 'type']);
    const badCursor = await t.http.get('/v1/events?cursor=abc.def').set(...bearer(org.token));
    expect(badCursor.status).toBe(400);
  });
});
