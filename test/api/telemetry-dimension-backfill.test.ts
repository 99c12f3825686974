import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { ManualClock } from '../support/clock';
import { up as dimensionSummaries } from '../../src/db/migrations/20261124_0250_telemetry_dimension_summaries';
import { up as dimensionHourly } from '../../src/db/migrations/20261124_0900_telemetry_dimension_hourly';
import { up as fiveMinute } from '../../src/db/migrations/20261124_1000_telemetry_five_minute';

/**
 * The back-fills of migrations 20261124_0250 and 20261124_0900 leave the per-dimension summaries
 * that ingestion keeps (shards summed), and that of 20261124_1000 the 5-minute rollup: events
 * ingested through the API, with tags arriving before, with and after a session's other events,
 * give the same rows when dropped and back-filled.
 */
const H = 3_600_000;
const NOW = new Date('2026-11-19T15:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ clock: new ManualClock(NOW) });
});
afterAll(() => t.close());

async function summaries() {
  const q = async (text: string) => (await sql.raw(text).execute(t.db)).rows;
  return {
    sessions: await q(`SELECT organization_id, dim_type, dim_value, session_id, last_hour::text, hours::text FROM telemetry_dimension_sessions ORDER BY 1, 2, 3, 4`),
    members: await q(`SELECT organization_id, dim_type, dim_value, day::text, member_id FROM telemetry_dimension_daily_members ORDER BY 1, 2, 3, 4, 5`),
    totals: await q(`SELECT organization_id, dim_type, dim_value, day::text, sum(tasks_completed)::int AS c, sum(tasks_failed)::int AS f,
                            sum(completed_duration_sum)::text AS ds, sum(completed_duration_count)::int AS dn
                     FROM telemetry_dimension_daily_totals GROUP BY 1, 2, 3, 4 HAVING sum(tasks_completed) + sum(tasks_failed) > 0 ORDER BY 1, 2, 3, 4`),
    keys: await q(`SELECT organization_id, dim_type, dim_value, week::text, kind, key FROM telemetry_dimension_weekly_keys ORDER BY 1, 2, 3, 4, 5, 6`),
    counts: await q(`SELECT organization_id, dim_type, dim_value, week::text, sum(active_members)::int AS m, sum(sessions)::int AS s
                     FROM telemetry_dimension_weekly_counts GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`),
    hourly: await q(`SELECT organization_id, dim_type, dim_value, hour::text, member_id, tasks_completed AS c, tasks_failed AS f,
                            completed_duration_sum::text AS ds, completed_duration_count AS dn
                     FROM telemetry_dimension_hourly ORDER BY 1, 2, 3, 4, 5`),
    fine: await q(`SELECT organization_id, bucket::text, member_id, session_key, tasks_completed AS c, tasks_failed AS f,
                          completed_duration_sum::text AS ds, completed_duration_count AS dn
                   FROM telemetry_five_minute_sessions ORDER BY 1, 2, 3, 4`),
  };
}

it('back-fills the per-dimension summaries ingestion keeps', async () => {
  const owner = await createOrganization(t, 'Backfill');
  const other = await addMember(t, owner.organizationId);
  const at = (hoursAgo: number) => new Date(NOW.getTime() - hoursAgo * H).toISOString();
  const batches = [
    { who: owner, events: [
      { type: 'task.completed', timestamp: at(30 * 24), sessionId: 'a', durationMs: 10, dimensions: [{ type: 'team', value: 'red' }] },
      { type: 'task.failed', timestamp: at(3), sessionId: 'b' },
      { type: 'user.active', timestamp: at(2) },
    ] },
    { who: other, events: [
      { type: 'task.completed', timestamp: at(200), sessionId: 'a', durationMs: 20 },
      { type: 'task.completed', timestamp: at(1), sessionId: 'b', dimensions: [{ type: 'team', value: 'blue' }, { type: 'env', value: 'ci' }] },
    ] },
    { who: owner, events: [
      { type: 'task.failed', timestamp: at(10 * 24), sessionId: 'b', dimensions: [{ type: 'team', value: 'red' }] },
      { type: 'task.started', timestamp: at(5), sessionId: 'c' },
      { type: 'task.completed', timestamp: at(5), sessionId: 'c', durationMs: 4 },
      { type: 'task.completed', timestamp: new Date(NOW.getTime() - 5 * H + 299_999).toISOString(), sessionId: 'c' },
      { type: 'task.completed', timestamp: new Date(NOW.getTime() - 5 * H + 300_000).toISOString() },
    ] },
  ];
  for (const { who, events } of batches) {
    expect((await t.http.post('/v1/telemetry/ingest').set(...bearer(who.token)).send({ events })).status).toBe(202);
  }
  const kept = await summaries();
  expect(kept.sessions.length).toBe(4);
  expect(kept.totals.length).toBeGreaterThan(3);
  // (tag, hour, member): red/a 2, blue/b 3, ci/b 3, red/b 3 (b's two earlier hours brought by the tag).
  expect(kept.hourly.length).toBe(11);
  // c's three events at 5 h ago and 5 h ago + 4:59.999 share a bucket; the session-less event a bucket later does not.
  expect(kept.fine.length).toBe(8);

  for (const table of ['sessions', 'daily_members', 'daily_totals', 'weekly_keys', 'weekly_counts', 'hourly']) {
    await sql`DROP TABLE ${sql.table(`telemetry_dimension_${table}`)}`.execute(t.db);
  }
  await sql`DROP INDEX telemetry_session_dimensions_session_idx`.execute(t.db);
  await dimensionSummaries(t.db as never);
  await dimensionHourly(t.db as never);
  await sql`DROP TABLE telemetry_five_minute_sessions`.execute(t.db);
  await fiveMinute(t.db as never);
  expect(await summaries()).toEqual(kept);
});
