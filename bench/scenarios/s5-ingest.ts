import { randomBytes } from 'node:crypto';
import { newId } from '../../src/lib/ids';
import type { BenchContext } from '../lib/context';
import { cpuExtras, cpuMsPerRequest, measureRounds, type LoadOptions, type LoopLoad, type Measurement } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const BATCH = 50;
const CONNECTIONS = 8;
/** The service and the floor take turns in this many rounds, so background work (a checkpoint after another scenario's seed, autovacuum) hits both alike. */
const ROUNDS = 4;
const TYPES = ['session.started', 'task.started', 'task.completed', 'task.failed', 'session.active', 'user.active', 'task.completed', 'task.started'];

export interface BenchEvent {
  type: string;
  timestamp: string;
  sessionId: string;
  durationMs?: number;
  success?: boolean;
  dimensions?: { type: string; value: string }[];
}

/** A 50-event batch of one new session (so concurrent batches do not queue on one rollup row). */
export function eventBatch(prefix: string, n: number): BenchEvent[] {
  const sessionId = `${prefix}-${n}-${randomBytes(4).toString('hex')}`;
  const base = Date.now() - 60_000;
  return Array.from({ length: BATCH }, (_, i) => {
    const type = i === 0 ? 'session.started' : i === BATCH - 1 ? 'session.ended' : TYPES[i % TYPES.length]!;
    return {
      type,
      timestamp: new Date(base + i * 1000).toISOString(),
      sessionId,
      ...(type === 'task.completed' ? { durationMs: 1000 + i * 10, success: true } : {}),
      ...(i === 0 ? { dimensions: [{ type: 'team', value: `team-${n % 5}` }] } : {}),
    };
  });
}

/** Autocannon requests posting a fresh batch each time. */
export function ingestRequests(token: string, prefix: string) {
  let n = 0;
  return [
    {
      method: 'POST',
      path: '/v1/telemetry/ingest',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      setupRequest: (req: object) => ({ ...req, body: JSON.stringify({ events: eventBatch(prefix, n++) }) }),
    },
  ];
}

/**
 * Scenario 5: POST /v1/telemetry/ingest with 50-event batches, against the floor: the rows the
 * service writes for a batch (events in one multi-row INSERT, the session's dimension tag, the
 * hourly and 5-minute rollups, the session's hours, the member's days, the daily totals and the weekly keys and
 * counts, and the same summaries for the tag, its hourly rollup included) written straight through
 * pg as multi-row statements in one transaction by as many loops, after the same per-session lock.
 * Keep it in step with `writeBatch` in src/telemetry/ingest.ts.
 */
export async function scenarioIngest(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '5',
    title: 'POST /v1/telemetry/ingest, 50-event batches, vs the same rows through pg',
    setup: [
      `${CONNECTIONS} connections (service) / ${CONNECTIONS} concurrent loops on a pg pool (floor), ${ctx.warmup} s warm-up + ${ctx.duration} s measured each, in ${ROUNDS} alternating rounds`,
      'each batch is a new session of 50 events (types mixed, one dimension tag), built per request; all batches are one member\'s, on the same day and ISO week (as real traffic of one organization is; the day and week rows are sharded by connection)',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const org = await seedOrganization(ctx.scratch.database.db, { name: 'Ingest Org', members: 20, teams: 2 });
  await ctx.scratch.analyze();
  const service = await ctx.startService('s5-service');
  // --previous: the earlier build on the same data, in the same rounds (printed, no target).
  const previous = ctx.startPrevious ? await ctx.startPrevious('s5-previous') : null;
  try {
    const probe = await fetch(`${service.url}/v1/telemetry/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: eventBatch('probe', 0) }),
    });
    if (probe.status === 501) {
      result.skipped = 'POST /v1/telemetry/ingest is not implemented yet';
      return result;
    }
    if (probe.status !== 202) throw new Error(`ingest answered ${probe.status}: ${await probe.text()}`);
    const pool = ctx.scratch.pool;
    let n = 0;
    let floorError = '';
    const floorWork = async () => {
      const events = eventBatch('floor', n++);
      const now = new Date();
      const values: unknown[] = [];
      const tuples = events.map((e, i) => {
        values.push(newId('telemetryEvent'), e.type, e.timestamp, e.durationMs ?? null, e.success ?? null, JSON.stringify(e.dimensions ?? []));
        const b = i * 6;
        const shared = BATCH * 6;
        return `($${b + 1}, $${shared + 1}, $${shared + 2}, $${b + 2}, $${b + 3}, $${shared + 3}, $${shared + 4}, $${b + 4}, $${b + 5}, $${b + 6}::jsonb)`;
      });
      values.push(org.organizationId, org.callerMemberId, now, events[0]!.sessionId);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        // Batches of one session are serialised, as the service's are.
        await client.query(`SELECT pg_advisory_xact_lock(hashtextextended('telemetry-session:' || $1::text || ':' || $2::text, 0))`, [org.organizationId, events[0]!.sessionId]);
        await client.query(
          `INSERT INTO telemetry_events (id, organization_id, member_id, type, occurred_at, received_at, session_id, duration_ms, success, dimensions) VALUES ${tuples.join(', ')}`,
          values,
        );
        await client.query(`INSERT INTO telemetry_session_dimensions (organization_id, type, value, session_id) VALUES ($1, 'team', $2, $3) ON CONFLICT DO NOTHING`, [
          org.organizationId,
          events[0]!.dimensions![0]!.value,
          events[0]!.sessionId,
        ]);
        // Per hour, day and ISO week of the batch (a batch may straddle an hour or a midnight).
        const hours = new Map<string, { completed: number; failed: number; dur: number }>();
        const buckets = new Map<string, { completed: number; failed: number; dur: number }>();
        const days = new Map<string, { completed: number; failed: number; dur: number }>();
        const weeks = new Set<string>();
        for (const e of events) {
          const at = new Date(e.timestamp);
          const hour = new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000).toISOString();
          const day = hour.slice(0, 10);
          weeks.add(new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() - ((at.getUTCDay() + 6) % 7))).toISOString().slice(0, 10));
          const bucket = new Date(Math.floor(at.getTime() / 300_000) * 300_000).toISOString();
          for (const [map, key] of [[hours, hour], [buckets, bucket], [days, day]] as const) {
            const c = map.get(key) ?? { completed: 0, failed: 0, dur: 0 };
            if (e.type === 'task.completed') { c.completed += 1; c.dur += e.durationMs ?? 0; }
            if (e.type === 'task.failed') c.failed += 1;
            map.set(key, c);
          }
        }
        const hourList = [...hours.keys()].sort();
        const dayList = [...days.keys()].sort();
        const tuplesOf = (n: number, width: number, first: number) =>
          Array.from({ length: n }, (_, i) => `(${Array.from({ length: width }, (_, j) => `$${first + i * width + j}`).join(', ')})`).join(', ');
        await client.query(
          `INSERT INTO telemetry_hourly_sessions AS t (organization_id, hour, member_id, session_key, events, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
           SELECT $1, v.hour::timestamptz, $2, $3, v.events::int, v.c::int, v.f::int, v.ds::bigint, v.c::int FROM (VALUES ${tuplesOf(hourList.length, 5, 4)}) AS v(hour, events, c, f, ds)
           ON CONFLICT (organization_id, hour, member_id, session_key) DO UPDATE SET events = t.events + excluded.events,
             tasks_completed = t.tasks_completed + excluded.tasks_completed, tasks_failed = t.tasks_failed + excluded.tasks_failed,
             completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
             completed_duration_count = t.completed_duration_count + excluded.completed_duration_count`,
          [org.organizationId, org.callerMemberId, events[0]!.sessionId, ...hourList.flatMap((h) => {
            const c = hours.get(h)!;
            return [h, events.filter((e) => e.timestamp.startsWith(h.slice(0, 13))).length, c.completed, c.failed, c.dur];
          })],
        );
        const bucketList = [...buckets.keys()].sort();
        await client.query(
          `INSERT INTO telemetry_five_minute_sessions AS t (organization_id, bucket, member_id, session_key, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
           SELECT $1, v.bucket, $2, $3, v.c, v.f, v.ds, v.c FROM unnest($4::timestamptz[], $5::int[], $6::int[], $7::bigint[]) AS v(bucket, c, f, ds)
           ON CONFLICT (organization_id, bucket, member_id, session_key) DO UPDATE SET tasks_completed = t.tasks_completed + excluded.tasks_completed,
             tasks_failed = t.tasks_failed + excluded.tasks_failed, completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
             completed_duration_count = t.completed_duration_count + excluded.completed_duration_count`,
          [org.organizationId, org.callerMemberId, events[0]!.sessionId, bucketList, bucketList.map((b) => buckets.get(b)!.completed),
            bucketList.map((b) => buckets.get(b)!.failed), bucketList.map((b) => buckets.get(b)!.dur)],
        );
        await client.query(
          `INSERT INTO telemetry_sessions AS s (organization_id, session_id, last_hour, hours) VALUES ($1, $2, $3, $4::timestamptz[])
           ON CONFLICT (organization_id, session_id) DO UPDATE SET last_hour = greatest(s.last_hour, excluded.last_hour),
             hours = ARRAY(SELECT DISTINCT h FROM unnest(s.hours || excluded.hours) AS h ORDER BY h) WHERE NOT (excluded.hours <@ s.hours)`,
          [org.organizationId, events[0]!.sessionId, hourList[hourList.length - 1], hourList],
        );
        await client.query(`INSERT INTO telemetry_daily_members (organization_id, day, member_id) SELECT $1, d::date, $2 FROM unnest($3::text[]) AS d ON CONFLICT DO NOTHING`, [
          org.organizationId,
          org.callerMemberId,
          dayList,
        ]);
        await client.query(
          `INSERT INTO telemetry_daily_totals AS t (organization_id, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
           SELECT $1, v.day::date, pg_backend_pid() % 16, v.c::int, v.f::int, v.ds::bigint, v.c::int FROM (VALUES ${tuplesOf(dayList.length, 4, 2)}) AS v(day, c, f, ds)
           ON CONFLICT (organization_id, day, shard) DO UPDATE SET tasks_completed = t.tasks_completed + excluded.tasks_completed,
             tasks_failed = t.tasks_failed + excluded.tasks_failed, completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
             completed_duration_count = t.completed_duration_count + excluded.completed_duration_count`,
          [org.organizationId, ...dayList.flatMap((d) => [d, days.get(d)!.completed, days.get(d)!.failed, days.get(d)!.dur])],
        );
        const weekList = [...weeks].sort();
        await client.query(
          `WITH seen AS (
             INSERT INTO telemetry_weekly_keys (organization_id, week, kind, key)
             SELECT $1, w::date, k.kind, k.key FROM unnest($2::text[]) AS w CROSS JOIN (VALUES ('m', $3), ('s', $4)) AS k(kind, key)
             ON CONFLICT DO NOTHING RETURNING week, kind)
           INSERT INTO telemetry_weekly_counts AS c (organization_id, week, shard, active_members, sessions)
           SELECT $1, week, pg_backend_pid() % 16, count(*) FILTER (WHERE kind = 'm'), count(*) FILTER (WHERE kind = 's') FROM seen GROUP BY week ORDER BY week
           ON CONFLICT (organization_id, week, shard) DO UPDATE SET active_members = c.active_members + excluded.active_members, sessions = c.sessions + excluded.sessions`,
          [org.organizationId, weekList, org.callerMemberId, events[0]!.sessionId],
        );
        // The same summaries for the session's tag (a new session, so nothing earlier to add).
        const tag = events[0]!.dimensions![0]!.value;
        await client.query(
          `INSERT INTO telemetry_dimension_sessions AS s (organization_id, dim_type, dim_value, session_id, last_hour, hours) VALUES ($1, 'team', $2, $3, $4, $5::timestamptz[])
           ON CONFLICT (organization_id, dim_type, dim_value, session_id) DO UPDATE SET last_hour = excluded.last_hour, hours = excluded.hours`,
          [org.organizationId, tag, events[0]!.sessionId, hourList[hourList.length - 1], hourList],
        );
        await client.query(
          `WITH m AS (
             INSERT INTO telemetry_dimension_daily_members (organization_id, dim_type, dim_value, day, member_id)
             SELECT $1, 'team', $2, d::date, $3 FROM unnest($4::text[]) AS d ON CONFLICT DO NOTHING),
           t AS (
             INSERT INTO telemetry_dimension_daily_totals AS t (organization_id, dim_type, dim_value, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
             SELECT $1, 'team', $2, v.day::date, pg_backend_pid() % 16, v.c, v.f, v.ds, v.c FROM unnest($4::text[], $5::int[], $6::int[], $7::bigint[]) AS v(day, c, f, ds)
             ON CONFLICT (organization_id, dim_type, dim_value, day, shard) DO UPDATE SET tasks_completed = t.tasks_completed + excluded.tasks_completed,
               tasks_failed = t.tasks_failed + excluded.tasks_failed, completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
               completed_duration_count = t.completed_duration_count + excluded.completed_duration_count),
           h AS (
             INSERT INTO telemetry_dimension_hourly AS h (organization_id, dim_type, dim_value, hour, member_id, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
             SELECT $1, 'team', $2, v.hour, $3, v.c, v.f, v.ds, v.c FROM unnest($10::timestamptz[], $11::int[], $12::int[], $13::bigint[]) AS v(hour, c, f, ds)
             ON CONFLICT (organization_id, dim_type, dim_value, hour, member_id) DO UPDATE SET tasks_completed = h.tasks_completed + excluded.tasks_completed,
               tasks_failed = h.tasks_failed + excluded.tasks_failed, completed_duration_sum = h.completed_duration_sum + excluded.completed_duration_sum,
               completed_duration_count = h.completed_duration_count + excluded.completed_duration_count),
           seen AS (
             INSERT INTO telemetry_dimension_weekly_keys (organization_id, dim_type, dim_value, week, kind, key)
             SELECT $1, 'team', $2, w::date, k.kind, k.key FROM unnest($8::text[]) AS w CROSS JOIN (VALUES ('m', $3), ('s', $9)) AS k(kind, key)
             ON CONFLICT DO NOTHING RETURNING week, kind)
           INSERT INTO telemetry_dimension_weekly_counts AS c (organization_id, dim_type, dim_value, week, shard, active_members, sessions)
           SELECT $1, 'team', $2, week, pg_backend_pid() % 16, count(*) FILTER (WHERE kind = 'm'), count(*) FILTER (WHERE kind = 's') FROM seen GROUP BY week ORDER BY week
           ON CONFLICT (organization_id, dim_type, dim_value, week, shard) DO UPDATE SET active_members = c.active_members + excluded.active_members, sessions = c.sessions + excluded.sessions`,
          [org.organizationId, tag, org.callerMemberId, dayList, dayList.map((d) => days.get(d)!.completed), dayList.map((d) => days.get(d)!.failed),
            dayList.map((d) => days.get(d)!.dur), weekList, events[0]!.sessionId,
            hourList, hourList.map((h) => hours.get(h)!.completed), hourList.map((h) => hours.get(h)!.failed), hourList.map((h) => hours.get(h)!.dur)],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        floorError = err instanceof Error ? err.message : String(err);
        throw err;
      } finally {
        client.release();
      }
    };
    const serviceLoad: LoadOptions = { label: 'service', url: service.url, connections: CONNECTIONS, duration: ctx.duration, warmup: ctx.warmup, requests: ingestRequests(org.callerToken, 's5'), targets: [service] };
    const floorLoad: LoopLoad = { label: 'floor: pg, one transaction', concurrency: CONNECTIONS, work: floorWork, duration: ctx.duration, warmup: ctx.warmup };
    const previousLoad: LoadOptions[] = previous ? [{ label: 'previous build', url: previous.url, connections: CONNECTIONS, duration: ctx.duration, warmup: ctx.warmup, requests: ingestRequests(org.callerToken, 's5p'), targets: [previous] }] : [];
    const [measured, floor, earlier] = (await measureRounds([serviceLoad, floorLoad, ...previousLoad], ROUNDS)) as [Measurement, Measurement, Measurement | undefined];
    if (floor.requests === 0) throw new Error(`the floor failed on every batch (${floor.errors} errors): ${floorError}`);
    for (const m of [measured, floor, ...(earlier ? [earlier] : [])]) {
      m.extra = { events_per_s: m.rps * BATCH, ...(m === floor ? {} : cpuExtras(m)) };
      result.rows.push(m);
    }
    if (earlier) result.notes.push(`events/s service / previous build: ${(measured.rps / earlier.rps).toFixed(2)}; service CPU per batch ${cpuMsPerRequest(measured).toFixed(2)} ms, previous ${cpuMsPerRequest(earlier).toFixed(2)} ms`);
    if (floor.errors > 0) result.notes.push(`floor errors: ${floor.errors} (last: ${floorError})`);
  } finally {
    await Promise.all([service.stop(), previous?.stop()]);
  }
  const [measured, floor] = result.rows as [Measurement, Measurement];
  result.checks.push(
    check('events/s service / floor', measured.rps / floor.rps, '>=', 0.5),
    check('service errors + non-2xx', measured.errors + measured.non2xx, '<=', 0),
  );
  return result;
}
