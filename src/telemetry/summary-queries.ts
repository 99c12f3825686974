import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { numbers, type AnalyticsRange, type WeekFigures, type WindowFigures } from './range';
import { dayStart, nextDay } from './time';

/*
 * Analytics from the summaries (with a dimension filter, the summaries kept per dimension). A rolling window (start, now] is split into
 * - whole UTC days strictly between the start's day and today: telemetry_daily_members and
 *   telemetry_daily_totals (rows bounded by members × days and shards × days);
 * - the whole hours of the start's day after the start's hour, and of today before the current
 *   hour: the hourly rollup (about a day of rows per edge);
 * - the partial hour after the start, and the current hour up to now: raw events (index-only).
 * Distinct sessions come from telemetry_sessions instead (see sessionsSince).
 */

/**
 * Which summaries a query reads: the organization's, or with a dimension filter the same summaries
 * kept per dimension (telemetry_dimension_*, see ./dimension-store.ts), with the hourly rollup and
 * raw events of the edges restricted to the sessions carrying the tag.
 */
interface Scope {
  table: (name: 'sessions' | 'daily_members' | 'daily_totals' | 'weekly_counts') => RawBuilder<unknown>;
  /** Extra condition on a summary table (column names unqualified, or qualified by `alias`). */
  rows: (alias?: string) => RawBuilder<unknown>;
  /** Extra condition on a session id column of the rollup or the events. */
  session: (column: string) => RawBuilder<unknown>;
}

function scopeOf(r: AnalyticsRange): Scope {
  const dim = r.dimension;
  if (!dim) return { table: (name) => sql.table(`telemetry_${name}`), rows: () => sql``, session: () => sql`` };
  return {
    table: (name) => sql.table(`telemetry_dimension_${name}`),
    rows: (alias) => (alias
      ? sql`AND ${sql.ref(`${alias}.dim_type`)} = ${dim.type} AND ${sql.ref(`${alias}.dim_value`)} = ${dim.value}`
      : sql`AND dim_type = ${dim.type} AND dim_value = ${dim.value}`),
    // A correlated probe of the tag's primary key per edge row (a few hundred rows): written as a
    // scalar subquery with LIMIT so the planner keeps it per row instead of hashing every session
    // carrying the tag (a cost that grows with the data).
    session: (column) => sql`AND coalesce((SELECT true FROM telemetry_session_dimensions t
      WHERE t.organization_id = ${r.organizationId} AND t.type = ${dim.type} AND t.value = ${dim.value} AND t.session_id = ${sql.ref(column)} LIMIT 1), false)`,
  };
}

/** Edge rows (member, tasks, in7, in30) from the hourly rollup and raw events. */
function windowEdges(r: AnalyticsRange, sc: Scope): RawBuilder<unknown> {
  const org = r.organizationId;
  const todayStart = dayStart(r.today);
  const hourly = (from: Date, to: Date, in7: boolean, in30: boolean) => sql`
    SELECT d.member_id, d.tasks_completed AS c, d.tasks_failed AS f, d.completed_duration_sum AS ds, d.completed_duration_count AS dn, ${in7}::boolean AS in7, ${in30}::boolean AS in30
    FROM telemetry_hourly_sessions d WHERE d.organization_id = ${org} AND d.hour >= ${from} AND d.hour < ${to} ${sc.session('d.session_key')}`;
  const raw = (from: RawBuilder<unknown>, to: RawBuilder<unknown>, in7: boolean, in30: boolean) => sql`
    SELECT e.member_id, (e.type = 'task.completed')::int AS c, (e.type = 'task.failed')::int AS f,
           CASE WHEN e.type = 'task.completed' THEN coalesce(e.duration_ms, 0) ELSE 0 END::bigint AS ds,
           CASE WHEN e.type = 'task.completed' AND e.duration_ms IS NOT NULL THEN 1 ELSE 0 END AS dn, ${in7}::boolean AS in7, ${in30}::boolean AS in30
    FROM telemetry_events e WHERE e.organization_id = ${org} AND ${from} AND ${to} ${sc.session('e.session_id')}`;
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
function sessionsSince(r: AnalyticsRange, sc: Scope, from: Date, edgeFrom: Date | null): RawBuilder<unknown> {
  const org = r.organizationId;
  const hasHourInRange = (alias: string) =>
    sql`EXISTS (SELECT 1 FROM unnest(${sql.ref(alias)}.hours) AS h WHERE h >= ${from} AND h < ${r.hourStart})`;
  const startEdge = edgeFrom
    ? sql`SELECT e.session_id FROM telemetry_events e
          WHERE e.organization_id = ${org} AND e.occurred_at > ${edgeFrom} AND e.occurred_at < ${from} AND e.session_id IS NOT NULL ${sc.session('e.session_id')}
          UNION`
    : sql``;
  return sql`(
    (SELECT count(*) FROM ${sc.table('sessions')} s WHERE s.organization_id = ${org} ${sc.rows('s')} AND s.last_hour >= ${from} AND s.last_hour < ${r.hourStart})
    + (SELECT count(*) FROM ${sc.table('sessions')} s WHERE s.organization_id = ${org} ${sc.rows('s')} AND s.last_hour >= ${r.hourStart} AND ${hasHourInRange('s')})
    + (SELECT count(*) FROM (
         ${startEdge}
         SELECT e.session_id FROM telemetry_events e
         WHERE e.organization_id = ${org} AND e.occurred_at >= ${r.hourStart} AND e.occurred_at <= ${r.now} AND e.session_id IS NOT NULL ${sc.session('e.session_id')}
       ) AS x
       WHERE NOT EXISTS (SELECT 1 FROM ${sc.table('sessions')} s2 WHERE s2.organization_id = ${org} ${sc.rows('s2')} AND s2.session_id = x.session_id AND ${hasHourInRange('s2')}))
  )`;
}

export async function summaryWindowFigures(db: Db, r: AnalyticsRange): Promise<WindowFigures> {
  const org = r.organizationId;
  const d7 = r.start7.toISOString().slice(0, 10);
  const d30 = r.start30.toISOString().slice(0, 10);
  const sc = scopeOf(r);
  const result = await sql<Record<keyof WindowFigures, string | number | null>>`
    WITH edge AS MATERIALIZED (${windowEdges(r, sc)}),
    m AS (
      SELECT member_id, bool_or(in7) AS in7, bool_or(in30) AS in30 FROM (
        SELECT member_id, in7, in30 FROM edge
        UNION ALL
        SELECT member_id, day > ${d7}::date, true FROM ${sc.table('daily_members')}
        WHERE organization_id = ${org} ${sc.rows()} AND day > ${d30}::date AND day < ${r.today}::date
      ) AS x GROUP BY member_id
    ),
    t AS (
      SELECT c, f, ds, dn, in7, in30 FROM edge
      UNION ALL
      SELECT tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count, day > ${d7}::date, true FROM ${sc.table('daily_totals')}
      WHERE organization_id = ${org} ${sc.rows()} AND day > ${d30}::date AND day < ${r.today}::date
    )
    SELECT (SELECT count(*) FILTER (WHERE in7) FROM m) AS active7,
           (SELECT count(*) FILTER (WHERE in30) FROM m) AS active30,
           ${sessionsSince(r, sc, r.start7HourEnd, r.start7)} AS sessions7,
           ${sessionsSince(r, sc, r.start30HourEnd, r.start30)} AS sessions30,
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
  const sc = scopeOf(r);
  const current = await sql<Record<keyof WeekFigures, string | number>>`
    WITH edge AS MATERIALIZED (
      SELECT d.member_id, d.tasks_completed AS c, d.tasks_failed AS f
      FROM telemetry_hourly_sessions d WHERE d.organization_id = ${org} AND d.hour >= ${todayStart} AND d.hour < ${r.hourStart} ${sc.session('d.session_key')}
      UNION ALL
      SELECT e.member_id, (e.type = 'task.completed')::int, (e.type = 'task.failed')::int
      FROM telemetry_events e WHERE e.organization_id = ${org} AND e.occurred_at >= ${r.hourStart} AND e.occurred_at <= ${r.now} ${sc.session('e.session_id')}
    )
    SELECT 11 AS week,
           (SELECT count(*) FROM (
              SELECT member_id FROM edge
              UNION
              SELECT member_id FROM ${sc.table('daily_members')} WHERE organization_id = ${org} ${sc.rows()} AND day >= ${r.currentWeek}::date AND day < ${r.today}::date
            ) AS x) AS "activeMembers",
           ${sessionsSince(r, sc, dayStart(r.currentWeek), null)} AS sessions,
           (SELECT coalesce(sum(c), 0) FROM edge) + (SELECT coalesce(sum(tasks_completed), 0) FROM ${sc.table('daily_totals')}
              WHERE organization_id = ${org} ${sc.rows()} AND day >= ${r.currentWeek}::date AND day < ${r.today}::date) AS "tasksCompleted",
           (SELECT coalesce(sum(f), 0) FROM edge) + (SELECT coalesce(sum(tasks_failed), 0) FROM ${sc.table('daily_totals')}
              WHERE organization_id = ${org} ${sc.rows()} AND day >= ${r.currentWeek}::date AND day < ${r.today}::date) AS "tasksFailed"`.execute(db);
  const past = await sql<Record<keyof WeekFigures, string | number>>`
    WITH counts AS (
      SELECT (week - ${r.firstWeek}::date) / 7 AS week, sum(active_members) AS members, sum(sessions) AS sessions
      FROM ${sc.table('weekly_counts')} WHERE organization_id = ${org} ${sc.rows()} AND week >= ${r.firstWeek}::date AND week < ${r.currentWeek}::date
      GROUP BY 1
    ),
    tasks AS (
      SELECT (day - ${r.firstWeek}::date) / 7 AS week, sum(tasks_completed) AS completed, sum(tasks_failed) AS failed
      FROM ${sc.table('daily_totals')} WHERE organization_id = ${org} ${sc.rows()} AND day >= ${r.firstWeek}::date AND day < ${r.currentWeek}::date
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
