import pino from 'pino';
import supertest from 'supertest';
import { sql, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from 'kysely';
import { createApp } from '../../src/app';
import { ManualClock } from '../../src/lib/clock';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';

/** Counts the statements the app sends to the database (one per round trip; BEGIN and COMMIT are not counted). */
class StatementCounter implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count += 1;
    return args.result;
  }
}

const NOW = new Date('2026-11-19T15:00:00.000Z');
const H = 3_600_000;
let t: TestApp;
let counter: StatementCounter;
let http: ReturnType<typeof supertest>;
beforeAll(async () => {
  t = await createTestApp({ clock: new ManualClock(NOW) });
  counter = new StatementCounter();
  const app = createApp({ db: t.db.withPlugin(counter), clock: t.clock, logger: pino({ level: 'silent' }), fetch: globalThis.fetch, settings: t.settings, validateResponses: true, compileValidatorsAtStart: false });
  http = supertest(app);
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
  const before = counter.count;
  const res = await http.post('/v1/telemetry/ingest').set(...bearer(owner.token)).send({ events });
  expect(res.status).toBe(202);
  expect(counter.count - before).toBe(7);

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
