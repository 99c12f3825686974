import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { numbers, type AnalyticsRange, type WeekFigures, type WindowFigures } from './range';
import { dayStart, nextDay } from './time';

/*
 * Unfiltered analytics from the summaries. A rolling window (start, now] is split into
 * - whole UTC days strictly between the start's day and today: telemetry_daily_members and
 *   telemetry_daily_totals (rows bounded by members × days and shards × days);
 * - the whole hours of the start's day after the start's hour, and of today before the current
 *   hour: the hourly rollup (about a day of rows per edge);
 * - the partial hour after the start, and the current hour up to now: raw events (index-only).
 * Distinct sessions come from telemetry_sessions instead (see sessionsSince).
 */

/** Edge rows (member, tasks, in7, in30) from the hourly rollup and raw events. */
function windowEdges(r: AnalyticsRange): RawBuilder<unknown> {
  const org = r.organizationId;
  const todayStart = dayStart(r.today);
  const hourly = (from: Date, to: Date, in7: boolean, in30: boolean) => sql`
    SELECT d.member_id, d.tasks_completed AS c, d.tasks_failed AS f, d.completed_duration_sum AS ds, d.completed_duration_count AS dn, ${in7}::boolean AS in7, ${in30}::boolean AS in30
    FROM telemetry_hourly_sessions d WHERE d.organization_id = ${org} AND d.hour >= ${from} AND d.hour < ${to}`;
  const raw = (from: RawBuilder<unknown>, to: RawBuilder<unknown>, in7: boolean, in30: boolean) => sql`
    SELECT e.member_id, (e.type = 'task.completed')::int AS c, (e.type = 'task.failed')::int AS f,
           CASE WHEN e.type = 'task.completed' THEN coalesce(e.duration_ms, 0) ELSE 0 END::bigint AS ds,
           CASE WHEN e.type = 'task.completed' AND e.duration_ms IS NOT NULL THEN 1 ELSE 0 END AS dn, ${in7}::boolean AS in7, ${in30}::boolean AS in30
    FROM telemetry_events e WHERE e.organization_id = ${org} AND ${from} AND ${to}`;
  return sql`
    ${hourly(r.start30HourEnd, nextDay(r.start30.toISOString().slice(0, 10)), false, true)}
    UNION ALL ${hourly(r.start7HourEnd, nextDay(r.start7.toISOString().slice(0, 10)), true, false)}
    UNION ALL ${hourly(todayStart, r.hourStart, true, true)}
    UNION ALL ${raw(sql`e.occurred_at > ${r.start30}`, sql`e.occurred_at < ${r.start30HourEnd}`, false, true)}
    UNION ALL ${raw(sql`e.occurred_at > ${r.start7}`, sql`e.occurred_at < ${r.start7HourEnd}`, true, false)}
    UNION ALL ${raw(sql`e.occurred_at >= ${r.hourStart}`, sql`e.occurred_at <= ${r.now}`, true, true)}`;
}

/**
 * Distinct sessions with an event in [from, now], plus (edgeFrom, from) when given; `from` is
 * the start of an hour. Sessions whose last hour is in [from, current hour) are counted from the
 * index alone; those with a later last hour (the current hour, or future-stamped events) by their
 * hours; and sessions seen only in the raw partial hours are added when not counted already.
 */
function sessionsSince(r: AnalyticsRange, from: Date, edgeFrom: Date | null): RawBuilder<unknown> {
  const org = r.organizationId;
  const hasHourInRange = (alias: string) =>
    sql`EXISTS (SELECT 1 FROM unnest(${sql.ref(alias)}.hours) AS h WHERE h >= ${from} AND h < ${r.hourStart})`;
  const startEdge = edgeFrom
    ? sql`SELECT e.session_id FROM telemetry_events e
          WHERE e.organization_id = ${org} AND e.occurred_at > ${edgeFrom} AND e.occurred_at < ${from} AND e.session_id IS NOT NULL
          UNION`
    : sql``;
  return sql`(
    (SELECT count(*) FROM telemetry_sessions s WHERE s.organization_id = ${org} AND s.last_hour >= ${from} AND s.last_hour < ${r.hourStart})
    + (SELECT count(*) FROM telemetry_sessions s WHERE s.organization_id = ${org} AND s.last_hour >= ${r.hourStart} AND ${hasHourInRange('s')})
    + (SELECT count(*) FROM (
         ${startEdge}
         SELECT e.session_id FROM telemetry_events e
         WHERE e.organization_id = ${org} AND e.occurred_at >= ${r.hourStart} AND e.occurred_at <= ${r.now} AND e.session_id IS NOT NULL
       ) AS x
       WHERE NOT EXISTS (SELECT 1 FROM telemetry_sessions s2 WHERE s2.organization_id = ${org} AND s2.session_id = x.session_id AND ${hasHourInRange('s2')}))
  )`;
}

export async function summaryWindowFigures(db: Db, r: AnalyticsRange): Promise<WindowFigures> {
  const org = r.organizationId;
  const d7 = r.start7.toISOString().slice(0, 10);
  const d30 = r.start30.toISOString().slice(0, 10);
  const result = await sql<Record<keyof WindowFigures, string | number | null>>`
    WITH edge AS MATERIALIZED (${windowEdges(r)}),
    m AS (
      SELECT member_id, bool_or(in7) AS in7, bool_or(in30) AS in30 FROM (
        SELECT member_id, in7, in30 FROM edge
        UNION ALL
        SELECT member_id, day > ${d7}::date, true FROM telemetry_daily_members
        WHERE organization_id = ${org} AND day > ${d30}::date AND day < ${r.today}::date
      ) AS x GROUP BY member_id
    ),
    t AS (
      SELECT c, f, ds, dn, in7, in30 FROM edge
      UNION ALL
      SELECT tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count, day > ${d7}::date, true FROM telemetry_daily_totals
      WHERE organization_id = ${org} AND day > ${d30}::date AND day < ${r.today}::date
    )
    SELECT (SELECT count(*) FILTER (WHERE in7) FROM m) AS active7,
           (SELECT count(*) FILTER (WHERE in30) FROM m) AS active30,
           ${sessionsSince(r, r.start7HourEnd, r.start7)} AS sessions7,
           ${sessionsSince(r, r.start30HourEnd, r.start30)} AS sessions30,
           tt.*
    FROM (SELECT coalesce(sum(c) FILTER (WHERE in7), 0) AS completed7, coalesce(sum(f) FILTER (WHERE in7), 0) AS failed7,
                 coalesce(sum(c) FILTER (WHERE in30), 0) AS completed30, coalesce(sum(f) FILTER (WHERE in30), 0) AS failed30,
                 coalesce(sum(ds) FILTER (WHERE in30), 0) AS "durationSum30", coalesce(sum(dn) FILTER (WHERE in30), 0) AS "durationCount30"
          FROM t) AS tt`.execute(db);
  return numbers(result.rows[0]!);
}

/** The current ISO week up to now, and the complete past weeks from `r.firstWeek` (week 0). */
export async function summaryWeekFigures(db: Db, r: AnalyticsRange): Promise<WeekFigures[]> {
  const org = r.organizationId;
  const todayStart = dayStart(r.today);
  const current = await sql<Record<keyof WeekFigures, string | number>>`
    WITH edge AS MATERIALIZED (
      SELECT d.member_id, d.tasks_completed AS c, d.tasks_failed AS f
      FROM telemetry_hourly_sessions d WHERE d.organization_id = ${org} AND d.hour >= ${todayStart} AND d.hour < ${r.hourStart}
      UNION ALL
      SELECT e.member_id, (e.type = 'task.completed')::int, (e.type = 'task.failed')::int
      FROM telemetry_events e WHERE e.organization_id = ${org} AND e.occurred_at >= ${r.hourStart} AND e.occurred_at <= ${r.now}
    )
    SELECT 11 AS week,
           (SELECT count(*) FROM (
              SELECT member_id FROM edge
              UNION
              SELECT member_id FROM telemetry_daily_members WHERE organization_id = ${org} AND day >= ${r.currentWeek}::date AND day < ${r.today}::date
            ) AS x) AS "activeMembers",
           ${sessionsSince(r, dayStart(r.currentWeek), null)} AS sessions,
           (SELECT coalesce(sum(c), 0) FROM edge) + (SELECT coalesce(sum(tasks_completed), 0) FROM telemetry_daily_totals
              WHERE organization_id = ${org} AND day >= ${r.currentWeek}::date AND day < ${r.today}::date) AS "tasksCompleted",
           (SELECT coalesce(sum(f), 0) FROM edge) + (SELECT coalesce(sum(tasks_failed), 0) FROM telemetry_daily_totals
              WHERE organization_id = ${org} AND day >= ${r.currentWeek}::date AND day < ${r.today}::date) AS "tasksFailed"`.execute(db);
  const past = await sql<Record<keyof WeekFigures, string | number>>`
    WITH counts AS (
      SELECT (week - ${r.firstWeek}::date) / 7 AS week, sum(active_members) AS members, sum(sessions) AS sessions
      FROM telemetry_weekly_counts WHERE organization_id = ${org} AND week >= ${r.firstWeek}::date AND week < ${r.currentWeek}::date
      GROUP BY 1
    ),
    tasks AS (
      SELECT (day - ${r.firstWeek}::date) / 7 AS week, sum(tasks_completed) AS completed, sum(tasks_failed) AS failed
      FROM telemetry_daily_totals WHERE organization_id = ${org} AND day >= ${r.firstWeek}::date AND day < ${r.currentWeek}::date
      GROUP BY 1
    )
    SELECT week, coalesce(counts.members, 0) AS "activeMembers", coalesce(counts.sessions, 0) AS sessions,
           coalesce(tasks.completed, 0) AS "tasksCompleted", coalesce(tasks.failed, 0) AS "tasksFailed"
    FROM counts FULL JOIN tasks USING (week)`.execute(db);
  return [...past.rows, ...current.rows].map((row) => ({
    week: Number(row.week),
    activeMembers: Number(row.activeMembers),
    sessions: Number(row.sessions),
    tasksCompleted: Number(row.tasksCompleted),
    tasksFailed: Number(row.tasksFailed),
  }));
}
