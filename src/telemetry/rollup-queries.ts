import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { numbers, type AnalyticsRange, type WeekFigures, type WindowFigures } from './range';

/*
 * Analytics filtered by a session dimension, from the hourly rollup joined with the session tags
 * (the summaries in ./summary-queries.ts are not kept per dimension).
 */

/**
 * The rows analytics aggregates, from two sources so no window reads a full range of raw events:
 * - `d`: the hourly rollup for whole UTC hours before the current one (a row per hour, member and
 *   session);
 * - `t`, `h7`, `h30`: raw events of the current hour up to now, and of the partial first hour of the 7- and
 *   30-day windows (index-only scans of telemetry_events_org_time_idx).
 * Each event is in exactly one row of one source for any window, so sums do not double count.
 */
function facts(r: AnalyticsRange, part: { fromHour: Date; windowEdges: boolean }): RawBuilder<unknown> {
  const tagged = r.dimension
    ? sql`SELECT s.session_id FROM telemetry_session_dimensions s
          WHERE s.organization_id = ${r.organizationId} AND s.type = ${r.dimension.type} AND s.value = ${r.dimension.value}`
    : null;
  const rollupTag = tagged ? sql`AND d.session_key IN (${tagged})` : sql``;
  const rawTag = tagged ? sql`AND e.session_id IN (${tagged})` : sql``;
  const raw = (src: string, from: RawBuilder<unknown>, to: RawBuilder<unknown>) => sql`
    SELECT ${src}::text AS src, NULL::timestamptz AS hour, ${src === 't' ? sql`${r.today}::date` : sql`NULL::date`} AS day, e.member_id,
           coalesce(e.session_id, '') AS session_key,
           (e.type = 'task.completed')::int AS completed, (e.type = 'task.failed')::int AS failed,
           CASE WHEN e.type = 'task.completed' THEN coalesce(e.duration_ms, 0) ELSE 0 END::bigint AS dur_sum,
           CASE WHEN e.type = 'task.completed' AND e.duration_ms IS NOT NULL THEN 1 ELSE 0 END AS dur_n
    FROM telemetry_events e
    WHERE e.organization_id = ${r.organizationId} AND ${from} AND ${to} ${rawTag}`;
  const edges = part.windowEdges
    ? sql`UNION ALL ${raw('h7', sql`e.occurred_at > ${r.start7}`, sql`e.occurred_at < ${r.start7HourEnd}`)}
          UNION ALL ${raw('h30', sql`e.occurred_at > ${r.start30}`, sql`e.occurred_at < ${r.start30HourEnd}`)}`
    : sql``;
  return sql`
    SELECT 'd'::text AS src, d.hour, (d.hour AT TIME ZONE 'UTC')::date AS day, d.member_id, d.session_key,
           d.tasks_completed AS completed, d.tasks_failed AS failed, d.completed_duration_sum AS dur_sum, d.completed_duration_count AS dur_n
    FROM telemetry_hourly_sessions d
    WHERE d.organization_id = ${r.organizationId} AND d.hour >= ${part.fromHour} AND d.hour < ${r.hourStart} ${rollupTag}
    UNION ALL ${raw('t', sql`e.occurred_at >= ${r.hourStart}`, sql`e.occurred_at <= ${r.now}`)}
    ${edges}`;
}

/*
 * Distinct counts are written as `SELECT DISTINCT … ` in a subquery rather than `count(DISTINCT …)`:
 * the planner hashes the former, while the latter always sorts (with the text collation), which
 * is several times slower on tens of thousands of rollup rows.
 */

export async function windowFigures(db: Db, r: AnalyticsRange): Promise<WindowFigures> {
  // One pass: hashed grouping sets give per-session and per-member window flags plus the sums.
  const result = await sql<Record<keyof WindowFigures, string | number | null>>`
    WITH g AS (
      SELECT GROUPING(member_id) AS by_session, GROUPING(session_key) AS by_member,
             bool_or(in7) AS in7, bool_or(in30) AS in30,
             sum(completed) FILTER (WHERE in7) AS completed7, sum(failed) FILTER (WHERE in7) AS failed7,
             sum(completed) FILTER (WHERE in30) AS completed30, sum(failed) FILTER (WHERE in30) AS failed30,
             sum(dur_sum) FILTER (WHERE in30) AS dur_sum30, sum(dur_n) FILTER (WHERE in30) AS dur_n30,
             session_key
      FROM (
        SELECT member_id, session_key, completed, failed, dur_sum, dur_n,
               (src = 'd' AND hour >= ${r.start7HourEnd}) OR src IN ('t', 'h7') AS in7,
               (src = 'd' AND hour >= ${r.start30HourEnd}) OR src IN ('t', 'h30') AS in30
        FROM (${facts(r, { fromHour: r.start30HourEnd, windowEdges: true })}) AS facts
      ) AS f
      GROUP BY GROUPING SETS ((member_id), (session_key), ())
    )
    SELECT count(*) FILTER (WHERE by_member = 1 AND by_session = 0 AND in7) AS active7,
           count(*) FILTER (WHERE by_member = 1 AND by_session = 0 AND in30) AS active30,
           count(*) FILTER (WHERE by_session = 1 AND by_member = 0 AND in7 AND session_key <> '') AS sessions7,
           count(*) FILTER (WHERE by_session = 1 AND by_member = 0 AND in30 AND session_key <> '') AS sessions30,
           coalesce(max(completed7) FILTER (WHERE by_member = 1 AND by_session = 1), 0) AS completed7,
           coalesce(max(failed7) FILTER (WHERE by_member = 1 AND by_session = 1), 0) AS failed7,
           coalesce(max(completed30) FILTER (WHERE by_member = 1 AND by_session = 1), 0) AS completed30,
           coalesce(max(failed30) FILTER (WHERE by_member = 1 AND by_session = 1), 0) AS failed30,
           coalesce(max(dur_sum30) FILTER (WHERE by_member = 1 AND by_session = 1), 0) AS "durationSum30",
           coalesce(max(dur_n30) FILTER (WHERE by_member = 1 AND by_session = 1), 0) AS "durationCount30"
    FROM g`.execute(db);
  return numbers(result.rows[0]!);
}

/**
 * Per ISO week from `fromWeek` (week 0) to the current one, from the hourly rollup and this hour's raw
 * events; weeks without events are absent.
 */
export async function weeklyFigures(db: Db, r: AnalyticsRange, fromWeek: string): Promise<WeekFigures[]> {
  const result = await sql<Record<keyof WeekFigures, string | number>>`
    WITH f AS MATERIALIZED (
      SELECT (day - ${fromWeek}::date) / 7 AS week, member_id, session_key, completed, failed
      FROM (${facts(r, { fromHour: new Date(`${fromWeek}T00:00:00.000Z`), windowEdges: false })}) AS facts
    ),
    tasks AS (SELECT week, sum(completed) AS completed, sum(failed) AS failed FROM f GROUP BY week),
    members AS (SELECT week, count(*) AS n FROM (SELECT DISTINCT week, member_id FROM f) x GROUP BY week),
    sessions AS (SELECT week, count(*) AS n FROM (SELECT DISTINCT week, session_key FROM f WHERE session_key <> '') x GROUP BY week)
    SELECT tasks.week, coalesce(members.n, 0) AS "activeMembers", coalesce(sessions.n, 0) AS sessions,
           tasks.completed AS "tasksCompleted", tasks.failed AS "tasksFailed"
    FROM tasks LEFT JOIN members USING (week) LEFT JOIN sessions USING (week)`.execute(db);
  return result.rows.map((row) => ({
    week: Number(row.week),
    activeMembers: Number(row.activeMembers),
    sessions: Number(row.sessions),
    tasksCompleted: Number(row.tasksCompleted),
    tasksFailed: Number(row.tasksFailed),
  }));
}
