import { sql } from 'kysely';
import type supertest from 'supertest';
import { ManualClock } from '../support/clock';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';
import { countingApp } from '../support/statement-counter';

const NOW = new Date('2026-11-19T15:00:00.000Z');
const H = 3_600_000;
let t: TestApp;
let http: ReturnType<typeof supertest>;
let statements: ReturnType<typeof countingApp>['statements'];
beforeAll(async () => {
  t = await createTestApp({ clock: new ManualClock(NOW) });
  ({ http, statements } = countingApp(t));
});
afterAll(() => t.close());

/**
 * A batch is one transaction of few statements whatever it holds: each statement is a round trip,
 * and the round trips' socket writes were most of what an ingest cost the service. The session
 * check, the sessions' locks, the events with their tags, the tagged summaries, the rollups with the
 * sessions' hours, the tagged sessions' hours, the calendar summaries: seven.
 */
it('an ingest batch touching every summary is seven statements, and every summary has its rows', async () => {
  const owner = await createOrganization(t, 'Round trips');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const at = (hoursAgo: number) => new Date(NOW.getTime() - hoursAgo * H).toISOString();
  const events = [
    { type: 'task.completed', timestamp: at(30), sessionId: 'a', durationMs: 1000, dimensions: [{ type: 'team', value: 'red' }] },
    { type: 'task.failed', timestamp: at(2), sessionId: 'a' },
    { type: 'task.completed', timestamp: at(1), sessionId: 'b', durationMs: 500, dimensions: [{ type: 'team', value: 'blue' }] },
    { type: 'session.started', timestamp: at(1) },
  ];
  let res: supertest.Response | undefined;
  expect(await statements(async () => (res = await http.post('/v1/telemetry/ingest').set(...bearer(owner.token)).send({ events })))).toBe(7);
  expect(res!.status).toBe(202);

  // Every table the batch writes holds its rows (one statement per group does not drop a part).
  const org = owner.organizationId;
  const counts = await sql<Record<string, number>>`SELECT
      (SELECT count(*)::int FROM telemetry_events WHERE organization_id = ${org}) AS events,
      (SELECT count(*)::int FROM telemetry_session_dimensions WHERE organization_id = ${org}) AS tags,
      (SELECT count(*)::int FROM telemetry_hourly_sessions WHERE organization_id = ${org}) AS hourly,
      (SELECT count(*)::int FROM telemetry_five_minute_sessions WHERE organization_id = ${org}) AS five_minute,
      (SELECT count(*)::int FROM telemetry_sessions WHERE organization_id = ${org}) AS sessions,
      (SELECT count(*)::int FROM telemetry_dimension_sessions WHERE organization_id = ${org}) AS dimension_sessions,
      (SELECT count(*)::int FROM telemetry_dimension_hourly WHERE organization_id = ${org}) AS dimension_hourly,
      (SELECT count(*)::int FROM telemetry_daily_members WHERE organization_id = ${org}) AS daily_members,
      (SELECT coalesce(sum(tasks_completed), 0)::int FROM telemetry_daily_totals WHERE organization_id = ${org}) AS completed,
      (SELECT coalesce(sum(tasks_failed), 0)::int FROM telemetry_daily_totals WHERE organization_id = ${org}) AS failed,
      (SELECT count(*)::int FROM telemetry_weekly_keys WHERE organization_id = ${org}) AS weekly_keys,
      (SELECT coalesce(sum(sessions), 0)::int FROM telemetry_weekly_counts WHERE organization_id = ${org}) AS weekly_sessions`.execute(t.db);
  expect(counts.rows[0]).toEqual({
    events: 4,
    tags: 2,
    // Hours: 30 h ago (a), 2 h ago (a), 1 h ago (b, and the session-less event).
    hourly: 4,
    five_minute: 4,
    sessions: 2,
    dimension_sessions: 2,
    // a's two hours under red, b's hour under blue.
    dimension_hourly: 3,
    // 2026-11-18 and 2026-11-19.
    daily_members: 2,
    completed: 2,
    failed: 1,
    // One ISO week: the member and sessions a and b.
    weekly_keys: 3,
    weekly_sessions: 2,
  });
});
