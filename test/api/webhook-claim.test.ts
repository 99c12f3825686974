import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { connectServer, type Database } from '../../src/db/connect';
import type { DB } from '../../src/db/schema';
import { JOB_SESSION_SETTINGS } from '../../src/jobs';
import { claimDeliveries, recordOutcomes } from '../../src/webhooks/dispatch-store';
import { createTestApp, type TestApp } from '../support/app';
import { serverUrl } from '../support/env';
import { bearer, createOrganization } from '../support/factories';
import { WEBHOOK_TEST_ENV } from '../support/webhooks';

/**
 * A dispatcher's claim costs the same whatever the queue holds: it looks at the endpoints that
 * have deliveries queued (not every endpoint), reads the due deliveries of each up to its limit
 * and leases them by primary key. That must hold when a burst was
 * queued after the table's statistics were taken (the usual case: a backlog arrives faster than
 * autovacuum analyzes); a plan reading every pending delivery on each claim drains a queue the
 * slower the longer it is. The claims run on a connection made as the service makes its job
 * runner's (src/main.ts: JOB_SESSION_SETTINGS).
 */
let t: TestApp;
let jobs: Database;
beforeAll(async () => {
  t = await createTestApp({ env: WEBHOOK_TEST_ENV });
  // One connection: its prepared statements' plans are what the claims below reuse.
  jobs = connectServer(serverUrl(t.database.name!), { max: 1, sessionSettings: JOB_SESSION_SETTINGS });
});
afterAll(async () => {
  await jobs.close();
  await t.close();
});

const ENDPOINTS = 5;
const PER_ENDPOINT = 8;

async function queue(organizationId: string, prefix: string, events: number, at: Date): Promise<void> {
  await sql`INSERT INTO events (id, organization_id, type, data, created_at)
    SELECT ${prefix} || i, ${organizationId}, 'team.created', '{"target":null,"changes":{}}'::jsonb, ${at}::timestamptz FROM generate_series(1, ${events}::int) i`.execute(t.db);
  await sql`INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at, updated_at)
    SELECT 'whd_' || ${prefix} || i || '_' || e.id, ${organizationId}, e.id, ${prefix} || i, 'team.created', 'pending', ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
    FROM generate_series(1, ${events}::int) i CROSS JOIN webhook_endpoints e WHERE e.organization_id = ${organizationId}`.execute(t.db);
}

interface Reads {
  claimed: number;
  /** Delivery rows read by the claim, by the outcome batch; endpoint rows read by the claim. */
  claimRead: number;
  recordRead: number;
  claimEndpointsRead: number;
}

class Measured extends Error {
  constructor(readonly result: Reads) {
    super('rolled back');
  }
}

/**
 * Claims once in a transaction of its own, records every claimed delivery as delivered, counts
 * the delivery rows Postgres read for each statement, and rolls it all back.
 */
async function claimAndCountReads(db: Kysely<DB>): Promise<Reads> {
  try {
    await db.transaction().execute(async (trx) => {
      // The backend's counts not yet sent to the statistics (they may include statements just before): differences.
      const reads = async (table: string) => {
        const { rows } = await sql<{ read: string }>`
          SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::text AS read FROM pg_stat_xact_user_tables WHERE relname = ${table}`.execute(trx);
        return Number(rows[0]?.read ?? 0);
      };
      const read = () => reads('webhook_deliveries');
      const before = await read();
      const endpointsBefore = await reads('webhook_endpoints');
      const now = t.clock.now();
      const claimed = await claimDeliveries(trx, { now, leaseUntil: new Date(now.getTime() + 30_000), token: randomBytes(12).toString('base64url'), batch: 64, perEndpoint: PER_ENDPOINT });
      const afterClaim = await read();
      const claimEndpointsRead = (await reads('webhook_endpoints')) - endpointsBefore;
      const outcomes = claimed.map((d) => ({ id: d.id, token: d.lease_token, endpointId: d.endpoint_id, organizationId: d.organization_id, status: 'succeeded' as const, code: 204, error: null, next: null, finished: now }));
      await recordOutcomes(trx, outcomes);
      const recorded = await sql<{ n: string }>`SELECT count(*)::text AS n FROM webhook_deliveries WHERE status = 'succeeded' AND lease_token IS NULL AND id = ANY (${claimed.map((d) => d.id)}::text[])`.execute(trx);
      expect(Number(recorded.rows[0]!.n)).toBe(claimed.length);
      const afterRecord = await read();
      throw new Measured({ claimed: claimed.length, claimRead: afterClaim - before, recordRead: afterRecord - afterClaim, claimEndpointsRead });
    });
  } catch (err) {
    if (err instanceof Measured) return err.result;
    throw err;
  }
  throw new Error('unreachable');
}

async function organizationWithEndpoints(name: string): Promise<string> {
  const owner = await createOrganization(t, name);
  for (let i = 0; i < ENDPOINTS; i++) {
    const res = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: `https://hooks.example.test/${name}/${i}`, events: ['team.*'] });
    expect(res.status).toBe(201);
  }
  return owner.organizationId;
}

/** Queues a burst of 2,000 events × the endpoints, claims once: full slots, and the rows read are the leased ones, not the queue. */
async function expectBurstClaimedByItsRows(organizationId: string, prefix: string, at: Date): Promise<void> {
  await queue(organizationId, prefix, 2000, at);
  const claim = await claimAndCountReads(jobs.db);
  expect(claim.claimed).toBe(ENDPOINTS * PER_ENDPOINT);
  // Each endpoint's first due rows and the leased rows themselves (80), not the queue (10,005).
  expect(claim.claimRead).toBeLessThanOrEqual(4 * ENDPOINTS * PER_ENDPOINT);
  expect(claim.recordRead).toBeLessThanOrEqual(4 * ENDPOINTS * PER_ENDPOINT);
}

it('claims and records outcomes reading the rows it leases when the statistics saw the queue empty, then 10,000 arrived', async () => {
  const organizationId = await organizationWithEndpoints('empty-then-burst');
  await sql`ANALYZE webhook_deliveries`.execute(t.db);
  const at = new Date(t.clock.now().getTime() - 1000);
  // An idle dispatcher polls: after five executions Postgres keeps a generic plan of the claim,
  // made from these statistics, until the next ANALYZE.
  await queue(organizationId, 'evt_idle_', 1, at);
  for (let i = 0; i < 8; i++) expect((await claimAndCountReads(jobs.db)).claimed).toBe(ENDPOINTS);
  await expectBurstClaimedByItsRows(organizationId, 'evt_empty_burst_', at);
});

it('claims and records outcomes reading the rows it leases when the statistics saw 25 queued, then 10,000 more arrived', async () => {
  await sql`TRUNCATE webhook_deliveries`.execute(t.db);
  const organizationId = await organizationWithEndpoints('small-then-burst');
  const at = new Date(t.clock.now().getTime() - 1000);
  await queue(organizationId, 'evt_small_', 5, at);
  await sql`ANALYZE webhook_deliveries`.execute(t.db);
  const small = await claimAndCountReads(jobs.db);
  expect(small.claimed).toBe(ENDPOINTS * 5);

  await expectBurstClaimedByItsRows(organizationId, 'evt_burst_', at);
});

it('looks only at endpoints with deliveries queued: an idle poll reads nothing of 2,000 endpoints', async () => {
  await sql`TRUNCATE webhook_deliveries`.execute(t.db);
  const organizationId = await organizationWithEndpoints('beside-many');
  // Another organization's 2,000 enabled endpoints, copies of one made through the API.
  const other = await createOrganization(t, 'many-endpoints');
  await sql`INSERT INTO webhook_endpoints (id, organization_id, url, events, enabled, secret_sealed, created_at, updated_at)
    SELECT 'whk_many_' || i, ${other.organizationId}, e.url, e.events, true, e.secret_sealed, e.created_at, e.updated_at
    FROM generate_series(1, 2000) i CROSS JOIN (SELECT * FROM webhook_endpoints WHERE organization_id = ${organizationId} LIMIT 1) e`.execute(t.db);
  // Deliveries made before: the queue is empty, the table is not.
  const before = new Date(t.clock.now().getTime() - 60_000);
  await queue(organizationId, 'evt_delivered_', 2000, before);
  await sql`UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL`.execute(t.db);
  await sql`ANALYZE webhook_endpoints`.execute(t.db);
  await sql`ANALYZE webhook_deliveries`.execute(t.db);

  const idle = await claimAndCountReads(jobs.db);
  expect(idle.claimed).toBe(0);
  expect(idle.claimEndpointsRead).toBe(0);
  expect(idle.claimRead).toBe(0);

  await queue(organizationId, 'evt_beside_', 2, new Date(t.clock.now().getTime() - 1000));
  const busy = await claimAndCountReads(jobs.db);
  expect(busy.claimed).toBe(ENDPOINTS * 2);
  // The five endpoints with deliveries (found, then read for the leased rows), not the 2,005.
  expect(busy.claimEndpointsRead).toBeLessThanOrEqual(4 * ENDPOINTS);
});
