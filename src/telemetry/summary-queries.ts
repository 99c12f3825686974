import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { numbers, type AnalyticsRange, type WeekFigures, type WindowFigures } from './range';
import { BUCKET_MS, dayStart, nextDay, startOfBucket } from './time';

/*
 * Analytics from the summaries (with a dimension filter, the summaries kept per dimension). A rolling window (start, now] is split into
 * - whole UTC days strictly between the start's day and today: telemetry_daily_members and
 *   telemetry_daily_totals (rows bounded by members × days and shards × days);
 * - the whole hours of the start's day after the start's hour, and of today before the current
 *   hour: the hourly rollup (about a day of rows per edge);
 * - the partial hour after the start, and the current hour up to now: the 5-minute rollup, and raw
 *   events (index-only) for the partial 5 minutes at each end.
 * The current ISO week (it starts after the 7-day window's start day) is today's edges, the same
 * rows as the windows', plus its whole days.
 * Distinct sessions come from telemetry_sessions instead (see sessionsSince).
 */

/**
 * Which summaries a query reads: the organization's, or with a dimension filter the same summaries
 * kept per dimension (telemetry_dimension_*, see ./dimension-store.ts, the hourly rollup included),
 * with the raw events of the partial hours restricted to the sessions carrying the tag.
 */
interface Scope {
  /** `hourly` is the hourly rollup: per session (telemetry_hourly_sessions), or per dimension (telemetry_dimension_hourly). */
  table: (name: 'hourly' | 'sessions' | 'daily_members' | 'daily_totals' | 'weekly_counts') => RawBuilder<unknown>;
  /** Extra condition on a summary table (column names unqualified, or qualified by `alias`). */
  rows: (alias?: string) => RawBuilder<unknown>;
  /** Extra condition on a session id column of the raw events. */
  session: (column: string) => RawBuilder<unknown>;
}

function scopeOf(r: AnalyticsRange): Scope {
  const dim = r.dimension;
  if (!dim) return { table: (name) => sql.table(name === 'hourly' ? 'telemetry_hourly_sessions' : `telemetry_${name}`), rows: () => sql``, session: () => sql`` };
  return {
    table: (name) => sql.table(`telemetry_dimension_${name}`),
    rows: (alias) => (alias
      ? sql`AND ${sql.ref(`${alias}.dim_type`)} = ${dim.type} AND ${sql.ref(`${alias}.dim_value`)} = ${dim.value}`
      : sql`AND dim_type = ${dim.type} AND dim_value = ${dim.value}`),
    // A correlated probe of the tag's primary key per session of the partial hours (a few dozen):
    // written as a scalar subquery with LIMIT so the planner keeps it per row instead of hashing
    // every session carrying the tag (a cost that grows with the data).
    session: (column) => sql`AND coalesce((SELECT true FROM telemetry_session_dimensions t
      WHERE t.organization_id = ${r.organizationId} AND t.type = ${dim.type} AND t.value = ${dim.value} AND t.session_id = ${sql.ref(column)} LIMIT 1), false)`,
  };
}

/** Raw-event segments of the edges (`raw.seg`): the partial hours after the window starts, and the current hour. */
const SEG_30 = 1;
const SEG_7 = 2;
const SEG_NOW = 3;

/**
 * The three partial hours, read once and summed per (segment, member, session): their whole
 * 5-minute buckets from the finer rollup, and raw events for the partial bucket at the window's
 * start and the current one up to now. The windows' edges, the week's current hour and the session
 * counts all take them from here, and a dimension filter probes the tag once per session.
 */
function rawEdges(r: AnalyticsRange): RawBuilder<unknown> {
  const org = r.organizationId;
  const events = (n: number, from: RawBuilder<unknown>, to: RawBuilder<unknown>) => sql`
    SELECT ${sql.lit(n)} AS seg, e.member_id, e.session_id, (e.type = 'task.completed')::int AS c, (e.type = 'task.failed')::int AS f,
           CASE WHEN e.type = 'task.completed' THEN coalesce(e.duration_ms, 0) ELSE 0 END AS ds,
           (e.type = 'task.completed' AND e.duration_ms IS NOT NULL)::int AS dn
    FROM telemetry_events e WHERE e.organization_id = ${org} AND ${from} AND ${to}`;
  const buckets = (n: number, from: Date, to: Date) => sql`
    SELECT ${sql.lit(n)}, b.member_id, nullif(b.session_key, ''), b.tasks_completed, b.tasks_failed, b.completed_duration_sum, b.completed_duration_count
    FROM telemetry_five_minute_sessions b WHERE b.organization_id = ${org} AND b.bucket >= ${from} AND b.bucket < ${to}`;
  // The window starts are exclusive: raw events after the start up to the next bucket, then whole buckets to the hour's end.
  const after = (start: Date) => new Date(startOfBucket(start).getTime() + BUCKET_MS);
  const nowBucket = startOfBucket(r.now);
  return sql`
    SELECT seg, member_id, session_id, sum(c) AS c, sum(f) AS f, sum(ds) AS ds, sum(dn) AS dn
    FROM (${events(SEG_30, sql`e.occurred_at > ${r.start30}`, sql`e.occurred_at < ${after(r.start30)}`)}
          UNION ALL ${buckets(SEG_30, after(r.start30), r.start30HourEnd)}
          UNION ALL ${events(SEG_7, sql`e.occurred_at > ${r.start7}`, sql`e.occurred_at < ${after(r.start7)}`)}
          UNION ALL ${buckets(SEG_7, after(r.start7), r.start7HourEnd)}
          UNION ALL ${buckets(SEG_NOW, r.hourStart, nowBucket)}
          UNION ALL ${events(SEG_NOW, sql`e.occurred_at >= ${nowBucket}`, sql`e.occurred_at <= ${r.now}`)}) AS x
    GROUP BY seg, member_id, session_id`;
}

/** Edge rows (member, tasks, in7, in30, wk: in the current week) from the hourly rollup and the raw CTE. */
function windowEdges(r: AnalyticsRange, sc: Scope): RawBuilder<unknown> {
  const hourly = (from: Date, to: Date, in7: boolean, in30: boolean, wk: boolean) => sql`
    SELECT d.member_id, d.tasks_completed AS c, d.tasks_failed AS f, d.completed_duration_sum AS ds, d.completed_duration_count AS dn,
           ${in7}::boolean AS in7, ${in30}::boolean AS in30, ${wk}::boolean AS wk
    FROM ${sc.table('hourly')} d WHERE d.organization_id = ${r.organizationId} ${sc.rows('d')} AND d.hour >= ${from} AND d.hour < ${to}`;
  return sql`
    ${hourly(r.start30HourEnd, nextDay(r.start30.toISOString().slice(0, 10)), false, true, false)}
    UNION ALL ${hourly(r.start7HourEnd, nextDay(r.start7.toISOString().slice(0, 10)), true, false, false)}
    UNION ALL ${hourly(dayStart(r.today), r.hourStart, true, true, true)}
    UNION ALL SELECT member_id, c, f, ds, dn, seg <> ${sql.lit(SEG_30)}, seg <> ${sql.lit(SEG_7)}, seg = ${sql.lit(SEG_NOW)} FROM raw`;
}

/**
 * Distinct sessions with an event in [from, now], plus those of the raw segment `edgeSeg` (the
 * partial hour before `from`) when given; `from` is the start of an hour. Sessions whose last hour
 * is in [from, current hour) are counted from the index alone; those with a later last hour (the
 * current hour, or future-stamped events) by their hours; and sessions seen only in the raw
 * partial hours are added when not counted already.
 */
function sessionsSince(r: AnalyticsRange, sc: Scope, from: Date, edgeSeg: number | null): RawBuilder<unknown> {
  const org = r.organizationId;
  const hasHourInRange = (alias: string) =>
    sql`EXISTS (SELECT 1 FROM unnest(${sql.ref(alias)}.hours) AS h WHERE h >= ${from} AND h < ${r.hourStart})`;
  const segs = edgeSeg === null ? sql`seg = ${sql.lit(SEG_NOW)}` : sql`seg IN (${sql.lit(edgeSeg)}, ${sql.lit(SEG_NOW)})`;
  return sql`(
    (SELECT count(*) FROM ${sc.table('sessions')} s WHERE s.organization_id = ${org} ${sc.rows('s')} AND s.last_hour >= ${from} AND s.last_hour < ${r.hourStart})
    + (SELECT count(*) FROM ${sc.table('sessions')} s WHERE s.organization_id = ${org} ${sc.rows('s')} AND s.last_hour >= ${r.hourStart} AND ${hasHourInRange('s')})
    + (SELECT count(*) FROM (SELECT DISTINCT session_id FROM raw WHERE ${segs} AND session_id IS NOT NULL) AS x
       WHERE NOT EXISTS (SELECT 1 FROM ${sc.table('sessions')} s2 WHERE s2.organization_id = ${org} ${sc.rows('s2')} AND s2.session_id = x.session_id AND ${hasHourInRange('s2')}))
  )`;
}

type CurrentWeek = { wkMembers: number; wkSessions: number; wkCompleted: number; wkFailed: number };

/** The rolling windows and the current ISO week up to now, in one statement (the edges are shared). */
async function windowAndCurrentWeek(db: Db, r: AnalyticsRange, sc: Scope): Promise<WindowFigures & CurrentWeek> {
  const org = r.organizationId;
  const d7 = r.start7.toISOString().slice(0, 10);
  const d30 = r.start30.toISOString().slice(0, 10);
  const result = await sql<Record<keyof (WindowFigures & CurrentWeek), string | number | null>>`
    WITH raw AS MATERIALIZED (
      SELECT * FROM (${rawEdges(r)}) AS g WHERE true ${sc.session('g.session_id')}
    ),
    edge AS MATERIALIZED (${windowEdges(r, sc)}),
    m AS (
      SELECT member_id, bool_or(in7) AS in7, bool_or(in30) AS in30, bool_or(wk) AS wk FROM (
        SELECT member_id, in7, in30, wk FROM edge
        UNION ALL
        SELECT member_id, day > ${d7}::date, true, day >= ${r.currentWeek}::date FROM ${sc.table('daily_members')}
        WHERE organization_id = ${org} ${sc.rows()} AND day > ${d30}::date AND day < ${r.today}::date
      ) AS x GROUP BY member_id
    ),
    t AS (
      SELECT c, f, ds, dn, in7, in30, wk FROM edge
      UNION ALL
      SELECT tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count, day > ${d7}::date, true, day >= ${r.currentWeek}::date
      FROM ${sc.table('daily_totals')}
      WHERE organization_id = ${org} ${sc.rows()} AND day > ${d30}::date AND day < ${r.today}::date
    )
    SELECT mm.*,
           ${sessionsSince(r, sc, r.start7HourEnd, SEG_7)} AS sessions7,
           ${sessionsSince(r, sc, r.start30HourEnd, SEG_30)} AS sessions30,
           ${sessionsSince(r, sc, dayStart(r.currentWeek), null)} AS "wkSessions",
           tt.*
    FROM (SELECT count(*) FILTER (WHERE in7) AS active7, count(*) FILTER (WHERE in30) AS active30, count(*) FILTER (WHERE wk) AS "wkMembers" FROM m) AS mm,
         (SELECT coalesce(sum(c) FILTER (WHERE in7), 0) AS completed7, coalesce(sum(f) FILTER (WHERE in7), 0) AS failed7,
                 coalesce(sum(c) FILTER (WHERE in30), 0) AS completed30, coalesce(sum(f) FILTER (WHERE in30), 0) AS failed30,
                 coalesce(sum(ds) FILTER (WHERE in30), 0) AS "durationSum30", coalesce(sum(dn) FILTER (WHERE in30), 0) AS "durationCount30",
                 coalesce(sum(c) FILTER (WHERE wk), 0) AS "wkCompleted", coalesce(sum(f) FILTER (WHERE wk), 0) AS "wkFailed"
          FROM t) AS tt`.execute(db);
  return numbers(result.rows[0]!);
}

/** The complete past weeks from `r.firstWeek` (week 0) before the current one. */
async function pastWeeks(db: Db, r: AnalyticsRange, sc: Scope): Promise<WeekFigures[]> {
  const org = r.organizationId;
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
  return past.rows.map((row) => numbers(row));
}

/** The rolling windows, and the 12 ISO weeks (week 11 the current one, up to now) as far as they have data. */
export async function summaryFigures(db: Db, r: AnalyticsRange): Promise<{ windows: WindowFigures; weeks: WeekFigures[] }> {
  const sc = scopeOf(r);
  const { wkMembers, wkSessions, wkCompleted, wkFailed, ...windows } = await windowAndCurrentWeek(db, r, sc);
  const weeks = await pastWeeks(db, r, sc);
  weeks.push({ week: 11, activeMembers: wkMembers, sessions: wkSessions, tasksCompleted: wkCompleted, tasksFailed: wkFailed });
  return { windows, weeks };
}
