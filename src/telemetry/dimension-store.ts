import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';
import type { HourlyDelta, SessionTag } from './ingest-store';

/*
 * The per-dimension summaries (migrations 20261124_0250 and _0900) that filtered analytics reads
 * (./summary-queries.ts with a dimension), kept by ingestion in the batch's transaction
 * (./ingest.ts): the batch's rollup deltas added once per tag of their session, and, when a
 * session gets a tag for the first time, its rollup rows stored before this batch added too.
 */

/**
 * Adds rollup rows (columns dim_type, dim_value, hour, member_id, session_key, c, f, ds, dn; one
 * row per tag) to the per-dimension hourly rollup, daily members, daily totals (this connection's
 * shard) and weekly keys and counts, in one statement. Every insert is grouped to distinct, sorted keys.
 */
async function addFacts(db: Db, name: string, organizationId: string, facts: RawBuilder<unknown>): Promise<void> {
  await sql`${preparedAs(name)}
    WITH r AS MATERIALIZED (${facts}),
    hourly AS (
      INSERT INTO telemetry_dimension_hourly AS h (organization_id, dim_type, dim_value, hour, member_id, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
      SELECT ${organizationId}, dim_type, dim_value, hour, member_id, sum(c), sum(f), sum(ds), sum(dn)
      FROM r GROUP BY 2, 3, 4, 5 ORDER BY 2, 3, 4, 5
      ON CONFLICT (organization_id, dim_type, dim_value, hour, member_id) DO UPDATE SET
        tasks_completed = h.tasks_completed + excluded.tasks_completed,
        tasks_failed = h.tasks_failed + excluded.tasks_failed,
        completed_duration_sum = h.completed_duration_sum + excluded.completed_duration_sum,
        completed_duration_count = h.completed_duration_count + excluded.completed_duration_count
    ),
    members AS (
      INSERT INTO telemetry_dimension_daily_members (organization_id, dim_type, dim_value, day, member_id)
      SELECT DISTINCT ${organizationId}, dim_type, dim_value, (hour AT TIME ZONE 'UTC')::date, member_id FROM r
      ORDER BY 2, 3, 4, 5
      ON CONFLICT DO NOTHING
    ),
    totals AS (
      INSERT INTO telemetry_dimension_daily_totals AS t (organization_id, dim_type, dim_value, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
      SELECT ${organizationId}, dim_type, dim_value, (hour AT TIME ZONE 'UTC')::date, pg_backend_pid() % 16, sum(c), sum(f), sum(ds), sum(dn)
      FROM r WHERE c > 0 OR f > 0 GROUP BY 2, 3, 4 ORDER BY 2, 3, 4
      ON CONFLICT (organization_id, dim_type, dim_value, day, shard) DO UPDATE SET
        tasks_completed = t.tasks_completed + excluded.tasks_completed,
        tasks_failed = t.tasks_failed + excluded.tasks_failed,
        completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
        completed_duration_count = t.completed_duration_count + excluded.completed_duration_count
    ),
    seen AS (
      INSERT INTO telemetry_dimension_weekly_keys (organization_id, dim_type, dim_value, week, kind, key)
      SELECT ${organizationId}, dim_type, dim_value, week, kind, key FROM (
        SELECT dim_type, dim_value, date_trunc('week', hour AT TIME ZONE 'UTC')::date AS week, 'm' AS kind, member_id AS key FROM r
        UNION
        SELECT dim_type, dim_value, date_trunc('week', hour AT TIME ZONE 'UTC')::date, 's', session_key FROM r
      ) AS k ORDER BY 2, 3, 4, 5, 6
      ON CONFLICT DO NOTHING
      RETURNING dim_type, dim_value, week, kind
    )
    INSERT INTO telemetry_dimension_weekly_counts AS c (organization_id, dim_type, dim_value, week, shard, active_members, sessions)
    SELECT ${organizationId}, dim_type, dim_value, week, pg_backend_pid() % 16, count(*) FILTER (WHERE kind = 'm'), count(*) FILTER (WHERE kind = 's')
    FROM seen GROUP BY 2, 3, 4 ORDER BY 2, 3, 4
    ON CONFLICT (organization_id, dim_type, dim_value, week, shard) DO UPDATE SET
      active_members = c.active_members + excluded.active_members,
      sessions = c.sessions + excluded.sessions`.execute(db);
}

/**
 * Adds to the per-dimension summaries, in one statement: the batch's hourly deltas (as given to
 * ./ingest-store.ts addRollups) once per tag their session carries, and for the sessions tagged
 * for the first time by this batch (`newTags`, as returned by insertEventsAndTags) the rollup rows their
 * earlier batches left. Runs before the batch's deltas are added to the rollup, so each event is
 * counted once.
 */
export async function addTagged(db: Db, organizationId: string, newTags: SessionTag[], deltas: HourlyDelta[]): Promise<void> {
  const tagged = deltas.filter((d) => d.sessionKey !== '');
  if (tagged.length === 0 && newTags.length === 0) return;
  // Each lookup is a LATERAL subquery fenced with OFFSET 0, so it runs once per batch row through
  // its primary key. As plain joins, an organization the planner's statistics do not know yet (a
  // new one, before autovacuum's next ANALYZE: estimated at one row) got a plan that scanned the
  // organization's whole rollup once per row of its sessions: 1.4 s a batch at 1,800 sessions.
  await addFacts(db, 'telemetry_dimension_facts', organizationId, sql`
    SELECT n.type AS dim_type, n.value AS dim_value, d.hour, d.member_id, d.session_key,
           d.tasks_completed AS c, d.tasks_failed AS f, d.completed_duration_sum AS ds, d.completed_duration_count AS dn
    FROM unnest(${newTags.map((t) => t.type)}::text[], ${newTags.map((t) => t.value)}::text[], ${newTags.map((t) => t.sessionId)}::text[]) AS n(type, value, session_id)
    CROSS JOIN LATERAL (SELECT s.hours FROM telemetry_sessions s WHERE s.organization_id = ${organizationId} AND s.session_id = n.session_id OFFSET 0) AS s
    CROSS JOIN LATERAL unnest(s.hours) AS h(at)
    CROSS JOIN LATERAL (
      SELECT d.hour, d.member_id, d.session_key, d.tasks_completed, d.tasks_failed, d.completed_duration_sum, d.completed_duration_count
      FROM telemetry_hourly_sessions d WHERE d.organization_id = ${organizationId} AND d.hour = h.at AND d.session_key = n.session_id OFFSET 0
    ) AS d
    UNION ALL
    SELECT t.type, t.value, u.hour, u.member_id, u.session_key, u.c, u.f, u.ds, u.dn
    FROM unnest(${tagged.map((d) => d.hour.toISOString())}::timestamptz[], ${tagged.map((d) => d.memberId)}::text[], ${tagged.map((d) => d.sessionKey)}::text[],
                ${tagged.map((d) => d.tasksCompleted)}::int[], ${tagged.map((d) => d.tasksFailed)}::int[],
                ${tagged.map((d) => d.completedDurationSum)}::bigint[], ${tagged.map((d) => d.completedDurationCount)}::int[])
         AS u(hour, member_id, session_key, c, f, ds, dn)
    CROSS JOIN LATERAL (
      SELECT t.type, t.value FROM telemetry_session_dimensions t WHERE t.organization_id = ${organizationId} AND t.session_id = u.session_key OFFSET 0
    ) AS t`);
}

/**
 * Copies the hours of the batch's tagged sessions (after ./ingest-store.ts addRollups) to
 * each of their tags; a row changes only when the session has a new hour or a new tag.
 */
export async function copyTaggedSessions(db: Db, organizationId: string, sessionIds: string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await sql`${preparedAs('telemetry_dimension_sessions')}
    INSERT INTO telemetry_dimension_sessions AS ds (organization_id, dim_type, dim_value, session_id, last_hour, hours)
    SELECT ${organizationId}, t.type, t.value, s.session_id, s.last_hour, s.hours
    FROM telemetry_session_dimensions t
    JOIN telemetry_sessions s ON s.organization_id = t.organization_id AND s.session_id = t.session_id
    WHERE t.organization_id = ${organizationId} AND t.session_id = ANY(${sessionIds}::text[])
    ORDER BY 2, 3, 4
    ON CONFLICT (organization_id, dim_type, dim_value, session_id) DO UPDATE SET
      last_hour = excluded.last_hour, hours = excluded.hours
    WHERE ds.hours IS DISTINCT FROM excluded.hours`.execute(db);
}
