import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';
import { WEBHOOK_TEST_ENV } from '../support/webhooks';
import { loadSettings, SettingsError } from '../../src/settings';

/**
 * The benchmark-only switch AUDIT_BENCH_DISABLE (bench scenario 8's baselines): `on` leaves out the
 * audit entry and the chain head and nothing else (the change, its event and its deliveries are
 * written, in one statement and in a transaction alike); `entries-and-events` leaves out the event
 * and its deliveries too. Off, as shipped, every change writes all of them.
 */
async function writes(t: TestApp) {
  const owner = await createOrganization(t, 'Bench switch');
  const hook = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: 'https://hooks.example.test/bench', events: ['team.*'] });
  expect(hook.status).toBe(201);
  // One statement (a team without members), then a change in a transaction (the rename).
  const created = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Benched' });
  expect(created.status).toBe(201);
  const renamed = await t.http.patch(`/v1/teams/${created.body.item.id}`).set(...bearer(owner.token)).send({ name: 'Renamed' });
  expect(renamed.status).toBe(200);
  const org = owner.organizationId;
  const count = async (query: ReturnType<typeof sql<{ n: number }>>) => Number((await query.execute(t.db)).rows[0]!.n);
  return {
    team: await count(sql`SELECT count(*)::int AS n FROM teams WHERE organization_id = ${org} AND name = 'Renamed'`),
    entries: await count(sql`SELECT count(*)::int AS n FROM audit_logs WHERE organization_id = ${org} AND action LIKE 'team.%'`),
    heads: await count(sql`SELECT count(*)::int AS n FROM audit_chain_heads WHERE organization_id = ${org}`),
    events: await count(sql`SELECT count(*)::int AS n FROM events WHERE organization_id = ${org} AND type LIKE 'team.%'`),
    deliveries: await count(sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE organization_id = ${org} AND event_type LIKE 'team.%'`),
  };
}

async function withSwitch(value: string | undefined) {
  const t = await createTestApp({ env: { ...WEBHOOK_TEST_ENV, WEBHOOK_DISPATCH: 'off', ...(value ? { AUDIT_BENCH_DISABLE: value } : {}) } });
  try {
    return await writes(t);
  } finally {
    await t.close();
  }
}

it('as shipped, writes the entries, the chain head, the events and their deliveries', async () => {
  expect(await withSwitch(undefined)).toEqual({ team: 1, entries: 2, heads: 1, events: 2, deliveries: 2 });
});

it('with AUDIT_BENCH_DISABLE=on, leaves out only the entries and the chain head', async () => {
  expect(await withSwitch('on')).toEqual({ team: 1, entries: 0, heads: 0, events: 2, deliveries: 2 });
});

it('with AUDIT_BENCH_DISABLE=entries-and-events, leaves out the events and deliveries too', async () => {
  expect(await withSwitch('entries-and-events')).toEqual({ team: 1, entries: 0, heads: 0, events: 0, deliveries: 0 });
});

it('refuses a value it does not know', () => {
  expect(() => loadSettings({ AUDIT_BENCH_DISABLE: 'events' })).toThrow(SettingsError);
  expect(loadSettings({ AUDIT_BENCH_DISABLE: 'off' }).auditBenchDisable).toBe('off');
});
