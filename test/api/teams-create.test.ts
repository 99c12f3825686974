import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';
import { WEBHOOK_TEST_ENV } from '../support/webhooks';

/**
 * POST /v1/teams without members writes the team, its audit entry and its event (with its
 * deliveries) in one statement (test/api/principal-round-trips.test.ts counts it); an
 * organization with more matching webhook endpoints than that statement carries delivery ids for
 * gets the same rows through a transaction.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: WEBHOOK_TEST_ENV });
});
afterAll(() => t.close());

it('queues a delivery for every matching endpoint, also beyond the ids the statement carries (then in a transaction)', async () => {
  const owner = await createOrganization(t, 'Team fan-out');
  const endpoints: string[] = [];
  for (let i = 0; i < 10; i++) {
    const res = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: `https://hooks.example.test/t${i}`, events: i % 2 ? ['team.*'] : ['team.created'] });
    expect(res.status).toBe(201);
    endpoints.push(res.body.item.id);
  }
  const res = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Ten hooks' });
  expect(res.status).toBe(201);
  const events = await sql<{ id: string }>`SELECT id FROM events WHERE type = 'team.created' AND data -> 'target' ->> 'id' = ${res.body.item.id}`.execute(t.db);
  expect(events.rows).toHaveLength(1);
  const deliveries = await sql<{ endpoint_id: string }>`SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ${events.rows[0]!.id} ORDER BY endpoint_id`.execute(t.db);
  expect(deliveries.rows.map((r) => r.endpoint_id)).toEqual([...endpoints].sort());
  // One team (the failed first statement wrote nothing), one entry, the chain whole.
  expect(await t.db.selectFrom('teams').select('id').where('organization_id', '=', owner.organizationId).execute()).toEqual([{ id: res.body.item.id }]);
  const audit = await t.http.get('/v1/audit-logs').query({ targetId: res.body.item.id }).set(...bearer(owner.token));
  expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(['team.created']);
  expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true, firstBrokenId: null });
});

it('keeps the audit chain whole when an organization creates teams at once', async () => {
  const owner = await createOrganization(t, 'Teams together');
  const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: `Team ${i}` })));
  expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
  expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toEqual({ ok: true, checked: 7, firstBrokenId: null });
});
