import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';

/*
 * The statements ingestion runs, in one transaction per batch (see ./ingest.ts): the session
 * locks, the raw events with the session tags, the hourly and 5-minute rollups with the sessions'
 * hours, and the calendar summaries analytics reads (./summary-queries.ts).
 */

export interface EventRow {
  id: string;
  organizationId: string;
  memberId: string;
  type: string;
  occurredAt: Date;
  receivedAt: Date;
  sessionId: string | null;
  durationMs: number | null;
  success: boolean | null;
  dimensions: unknown[];
}

/**
 * Serialises batches of the same sessions until the transaction ends (one advisory lock per
 * session, taken in one order). Without it, a batch bringing a session's first tag and a
 * concurrent batch of more events of that session each read before the other commits: the first
 * adds the session's earlier rollup rows to the tag's summaries, the second looks the session's
 * tags up, and neither sees the other's events. Runs first, so every later statement of the batch
 * (each with its own snapshot) sees what the previous batch of its sessions committed.
 */
export async function lockSessions(db: Db, organizationId: string, sessionIds: string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await sql`${preparedAs('telemetry_lock_sessions')}
    SELECT pg_advisory_xact_lock(k) FROM (
      SELECT DISTINCT hashtextextended('telemetry-session:' || ${organizationId}::text || ':' || u.s, 0) AS k FROM unnest(${sessionIds}::text[]) AS u(s)
      ORDER BY k
    ) AS l`.execute(db);
}

export interface SessionTag {
  organizationId: string;
  type: string;
  value: string;
  sessionId: string;
}

/**
 * The batch's raw events, in one INSERT from parallel arrays (a constant statement, prepared once
 * per connection, instead of 500 parameters compiled per batch), and its session tags (rows
 * distinct and sorted, so concurrent batches lock them in one order), in one statement: stored
 * whole or the statement fails. Returns the tags that are new (a session tagged for the first
 * time with that dimension): ./dimension-store.ts adds the session's earlier events to that
 * dimension's summaries. The two tables are independent, so one round trip serves both.
 */
export async function insertEventsAndTags(db: Db, organizationId: string, memberId: string, receivedAt: Date, rows: EventRow[], tags: SessionTag[]): Promise<SessionTag[]> {
  const added = await sql<{ type: string; value: string; session_id: string }>`${preparedAs('telemetry_insert_events_and_tags')}
    WITH events AS (
      INSERT INTO telemetry_events (id, organization_id, member_id, type, occurred_at, received_at, session_id, duration_ms, success, dimensions)
      SELECT u.id, ${organizationId}, ${memberId}, u.type, u.occurred_at, ${receivedAt.toISOString()}::timestamptz, u.session_id, u.duration_ms, u.success, u.dimensions
      FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.type)}::text[], ${rows.map((r) => r.occurredAt.toISOString())}::timestamptz[],
                  ${rows.map((r) => r.sessionId)}::text[], ${rows.map((r) => r.durationMs)}::int[], ${rows.map((r) => r.success)}::boolean[],
                  ${rows.map((r) => JSON.stringify(r.dimensions))}::jsonb[])
           AS u(id, type, occurred_at, session_id, duration_ms, success, dimensions)
    )
    INSERT INTO telemetry_session_dimensions (organization_id, type, value, session_id)
    SELECT ${organizationId}, u.type, u.value, u.session_id
    FROM unnest(${tags.map((t) => t.type)}::text[], ${tags.map((t) => t.value)}::text[], ${tags.map((t) => t.sessionId)}::text[]) WITH ORDINALITY AS u(type, value, session_id, n)
    ORDER BY u.n
    ON CONFLICT DO NOTHING
    RETURNING type, value, session_id`.execute(db);
  return added.rows.map((t) => ({ organizationId, type: t.type, value: t.value, sessionId: t.session_id }));
}

export interface HourlyDelta {
  organizationId: string;
  hour: Date;
  memberId: string;
  sessionKey: string;
  events: number;
  tasksCompleted: number;
  tasksFailed: number;
  completedDurationSum: number;
  completedDurationCount: number;
}

export interface BucketDelta {
  bucket: Date;
  memberId: string;
  sessionKey: string;
  tasksCompleted: number;
  tasksFailed: number;
  completedDurationSum: number;
  completedDurationCount: number;
}

export interface DailyDelta {
  day: string;
  tasksCompleted: number;
  tasksFailed: number;
  completedDurationSum: number;
  completedDurationCount: number;
}

export interface WeeklyKey {
  week: string;
  kind: 'm' | 's';
  key: string;
}

/*
 * The rollup and calendar writes below are each one statement of independent inserts (data-modifying
 * CTEs, one table each): a batch's transaction is a chain of round trips, and on a 2-core machine the
 * socket writes of those round trips were the service's largest cost of an ingest (scenario 5). Every
 * part still inserts its rows distinct and sorted, so concurrent batches lock them in one order. The
 * parts see one snapshot, which they may: none reads a table another writes.
 */

/**
 * Adds a batch's per-hour counts to the rollup, its per-5-minute counts to the finer rollup, and per
 * session the sorted set of UTC hours it has events in (a session's row changes only when the
 * batch brings a new hour; it is locked per session, so batches of different sessions never wait
 * on each other).
 */
export async function addRollups(db: Db, organizationId: string, hourly: HourlyDelta[], buckets: BucketDelta[], sessionHours: { sessionId: string; hour: Date }[]): Promise<void> {
  await sql`${preparedAs('telemetry_add_rollups')}
    WITH hourly AS (
      INSERT INTO telemetry_hourly_sessions AS t (organization_id, hour, member_id, session_key, events, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
      SELECT ${organizationId}, u.hour, u.member_id, u.session_key, u.events, u.completed, u.failed, u.dur_sum, u.dur_n
      FROM unnest(${hourly.map((d) => d.hour.toISOString())}::timestamptz[], ${hourly.map((d) => d.memberId)}::text[], ${hourly.map((d) => d.sessionKey)}::text[],
                  ${hourly.map((d) => d.events)}::int[], ${hourly.map((d) => d.tasksCompleted)}::int[], ${hourly.map((d) => d.tasksFailed)}::int[],
                  ${hourly.map((d) => d.completedDurationSum)}::bigint[], ${hourly.map((d) => d.completedDurationCount)}::int[])
           AS u(hour, member_id, session_key, events, completed, failed, dur_sum, dur_n)
      ON CONFLICT (organization_id, hour, member_id, session_key) DO UPDATE SET
        events = t.events + excluded.events,
        tasks_completed = t.tasks_completed + excluded.tasks_completed,
        tasks_failed = t.tasks_failed + excluded.tasks_failed,
        completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
        completed_duration_count = t.completed_duration_count + excluded.completed_duration_count
    ),
    five_minute AS (
      INSERT INTO telemetry_five_minute_sessions AS t (organization_id, bucket, member_id, session_key, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
      SELECT ${organizationId}, u.bucket, u.member_id, u.session_key, u.completed, u.failed, u.dur_sum, u.dur_n
      FROM unnest(${buckets.map((d) => d.bucket.toISOString())}::timestamptz[], ${buckets.map((d) => d.memberId)}::text[], ${buckets.map((d) => d.sessionKey)}::text[],
                  ${buckets.map((d) => d.tasksCompleted)}::int[], ${buckets.map((d) => d.tasksFailed)}::int[],
                  ${buckets.map((d) => d.completedDurationSum)}::bigint[], ${buckets.map((d) => d.completedDurationCount)}::int[])
           AS u(bucket, member_id, session_key, completed, failed, dur_sum, dur_n)
      ON CONFLICT (organization_id, bucket, member_id, session_key) DO UPDATE SET
        tasks_completed = t.tasks_completed + excluded.tasks_completed,
        tasks_failed = t.tasks_failed + excluded.tasks_failed,
        completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
        completed_duration_count = t.completed_duration_count + excluded.completed_duration_count
    )
    INSERT INTO telemetry_sessions AS s (organization_id, session_id, last_hour, hours)
    SELECT ${organizationId}, u.session_id, max(u.hour), array_agg(u.hour ORDER BY u.hour)
    FROM unnest(${sessionHours.map((p) => p.sessionId)}::text[], ${sessionHours.map((p) => p.hour.toISOString())}::timestamptz[]) AS u(session_id, hour)
    GROUP BY u.session_id ORDER BY u.session_id
    ON CONFLICT (organization_id, session_id) DO UPDATE SET
      last_hour = greatest(s.last_hour, excluded.last_hour),
      hours = ARRAY(SELECT DISTINCT h FROM unnest(s.hours || excluded.hours) AS h ORDER BY h)
    WHERE NOT (excluded.hours <@ s.hours)`.execute(db);
}

/**
 * The calendar summaries: the UTC days (`YYYY-MM-DD`, distinct, sorted) the member has events on
 * (existing rows left alone, no lock); task counts per UTC day added to the row of this
 * connection's shard (concurrent transactions run on different connections, so they update
 * different rows); and which members and sessions each ISO week has seen, the keys seen for the
 * first time added to this connection's shard of the week's counts.
 */
export async function addCalendar(db: Db, organizationId: string, memberId: string, days: string[], daily: DailyDelta[], weeklyKeys: WeeklyKey[]): Promise<void> {
  await sql`${preparedAs('telemetry_add_calendar')}
    WITH daily_members AS (
      INSERT INTO telemetry_daily_members (organization_id, day, member_id)
      SELECT ${organizationId}, u.day, ${memberId} FROM unnest(${days}::date[]) AS u(day)
      ON CONFLICT DO NOTHING
    ),
    daily_totals AS (
      INSERT INTO telemetry_daily_totals AS t (organization_id, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
      SELECT ${organizationId}, u.day, pg_backend_pid() % 16, u.completed, u.failed, u.dur_sum, u.dur_n
      FROM unnest(${daily.map((d) => d.day)}::date[], ${daily.map((d) => d.tasksCompleted)}::int[], ${daily.map((d) => d.tasksFailed)}::int[],
                  ${daily.map((d) => d.completedDurationSum)}::bigint[], ${daily.map((d) => d.completedDurationCount)}::int[])
           AS u(day, completed, failed, dur_sum, dur_n)
      ORDER BY u.day
      ON CONFLICT (organization_id, day, shard) DO UPDATE SET
        tasks_completed = t.tasks_completed + excluded.tasks_completed,
        tasks_failed = t.tasks_failed + excluded.tasks_failed,
        completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
        completed_duration_count = t.completed_duration_count + excluded.completed_duration_count
    ),
    seen AS (
      INSERT INTO telemetry_weekly_keys (organization_id, week, kind, key)
      SELECT ${organizationId}, u.week, u.kind, u.key
      FROM unnest(${weeklyKeys.map((k) => k.week)}::date[], ${weeklyKeys.map((k) => k.kind)}::text[], ${weeklyKeys.map((k) => k.key)}::text[]) AS u(week, kind, key)
      ON CONFLICT DO NOTHING
      RETURNING week, kind
    )
    INSERT INTO telemetry_weekly_counts AS c (organization_id, week, shard, active_members, sessions)
    SELECT ${organizationId}, week, pg_backend_pid() % 16, count(*) FILTER (WHERE kind = 'm'), count(*) FILTER (WHERE kind = 's')
    FROM seen GROUP BY week ORDER BY week
    ON CONFLICT (organization_id, week, shard) DO UPDATE SET
      active_members = c.active_members + excluded.active_members,
      sessions = c.sessions + excluded.sessions`.execute(db);
}
