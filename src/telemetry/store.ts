import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';

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
 * One INSERT of the whole batch from parallel arrays (a constant statement, prepared once per
 * connection, instead of 500 parameters compiled per batch): stored whole or the statement fails.
 */
export async function insertEvents(db: Db, organizationId: string, memberId: string, receivedAt: Date, rows: EventRow[]): Promise<void> {
  await sql`${preparedAs('telemetry_insert_events')}
    INSERT INTO telemetry_events (id, organization_id, member_id, type, occurred_at, received_at, session_id, duration_ms, success, dimensions)
    SELECT u.id, ${organizationId}, ${memberId}, u.type, u.occurred_at, ${receivedAt.toISOString()}::timestamptz, u.session_id, u.duration_ms, u.success, u.dimensions
    FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.type)}::text[], ${rows.map((r) => r.occurredAt.toISOString())}::timestamptz[],
                ${rows.map((r) => r.sessionId)}::text[], ${rows.map((r) => r.durationMs)}::int[], ${rows.map((r) => r.success)}::boolean[],
                ${rows.map((r) => JSON.stringify(r.dimensions))}::jsonb[])
         AS u(id, type, occurred_at, session_id, duration_ms, success, dimensions)`.execute(db);
}

export interface SessionTag {
  organizationId: string;
  type: string;
  value: string;
  sessionId: string;
}

/** Rows arrive sorted and distinct, so concurrent batches lock them in one order. */
export async function tagSessions(db: Db, tags: SessionTag[]): Promise<void> {
  if (tags.length === 0) return;
  await db
    .insertInto('telemetry_session_dimensions')
    .values(tags.map((t) => ({ organization_id: t.organizationId, type: t.type, value: t.value, session_id: t.sessionId })))
    .onConflict((oc) => oc.doNothing())
    .execute();
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

/** Adds a batch's per-hour counts to the rollup (rows distinct and sorted by key). */
export async function addHourly(db: Db, organizationId: string, deltas: HourlyDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  await sql`${preparedAs('telemetry_add_hourly')}
    INSERT INTO telemetry_hourly_sessions AS t (organization_id, hour, member_id, session_key, events, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
    SELECT ${organizationId}, u.hour, u.member_id, u.session_key, u.events, u.completed, u.failed, u.dur_sum, u.dur_n
    FROM unnest(${deltas.map((d) => d.hour.toISOString())}::timestamptz[], ${deltas.map((d) => d.memberId)}::text[], ${deltas.map((d) => d.sessionKey)}::text[],
                ${deltas.map((d) => d.events)}::int[], ${deltas.map((d) => d.tasksCompleted)}::int[], ${deltas.map((d) => d.tasksFailed)}::int[],
                ${deltas.map((d) => d.completedDurationSum)}::bigint[], ${deltas.map((d) => d.completedDurationCount)}::int[])
         AS u(hour, member_id, session_key, events, completed, failed, dur_sum, dur_n)
    ON CONFLICT (organization_id, hour, member_id, session_key) DO UPDATE SET
      events = t.events + excluded.events,
      tasks_completed = t.tasks_completed + excluded.tasks_completed,
      tasks_failed = t.tasks_failed + excluded.tasks_failed,
      completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
      completed_duration_count = t.completed_duration_count + excluded.completed_duration_count`.execute(db);
}

/**
 * Per session, the sorted set of UTC hours it has events in (pairs distinct, sorted by session
 * then hour). A row changes only when the batch brings a new hour; it is locked per session, so
 * batches of different sessions never wait on each other.
 */
export async function addSessionHours(db: Db, organizationId: string, pairs: { sessionId: string; hour: Date }[]): Promise<void> {
  if (pairs.length === 0) return;
  await sql`${preparedAs('telemetry_add_session_hours')}
    INSERT INTO telemetry_sessions AS s (organization_id, session_id, last_hour, hours)
    SELECT ${organizationId}, u.session_id, max(u.hour), array_agg(u.hour ORDER BY u.hour)
    FROM unnest(${pairs.map((p) => p.sessionId)}::text[], ${pairs.map((p) => p.hour.toISOString())}::timestamptz[]) AS u(session_id, hour)
    GROUP BY u.session_id ORDER BY u.session_id
    ON CONFLICT (organization_id, session_id) DO UPDATE SET
      last_hour = greatest(s.last_hour, excluded.last_hour),
      hours = ARRAY(SELECT DISTINCT h FROM unnest(s.hours || excluded.hours) AS h ORDER BY h)
    WHERE NOT (excluded.hours <@ s.hours)`.execute(db);
}

/** The UTC days (`YYYY-MM-DD`, distinct, sorted) the member has events on; existing rows are left alone (no lock). */
export async function addDailyMember(db: Db, organizationId: string, memberId: string, days: string[]): Promise<void> {
  if (days.length === 0) return;
  await sql`${preparedAs('telemetry_add_daily_member')}
    INSERT INTO telemetry_daily_members (organization_id, day, member_id)
    SELECT ${organizationId}, u.day, ${memberId} FROM unnest(${days}::date[]) AS u(day)
    ON CONFLICT DO NOTHING`.execute(db);
}

export interface DailyDelta {
  day: string;
  tasksCompleted: number;
  tasksFailed: number;
  completedDurationSum: number;
  completedDurationCount: number;
}

/**
 * Adds task counts per UTC day (days distinct and sorted) to the row of this connection's shard:
 * concurrent transactions run on different connections, so they update different rows.
 */
export async function addDailyTotals(db: Db, organizationId: string, deltas: DailyDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  await sql`${preparedAs('telemetry_add_daily_totals')}
    INSERT INTO telemetry_daily_totals AS t (organization_id, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
    SELECT ${organizationId}, u.day, pg_backend_pid() % 16, u.completed, u.failed, u.dur_sum, u.dur_n
    FROM unnest(${deltas.map((d) => d.day)}::date[], ${deltas.map((d) => d.tasksCompleted)}::int[], ${deltas.map((d) => d.tasksFailed)}::int[],
                ${deltas.map((d) => d.completedDurationSum)}::bigint[], ${deltas.map((d) => d.completedDurationCount)}::int[])
         AS u(day, completed, failed, dur_sum, dur_n)
    ORDER BY u.day
    ON CONFLICT (organization_id, day, shard) DO UPDATE SET
      tasks_completed = t.tasks_completed + excluded.tasks_completed,
      tasks_failed = t.tasks_failed + excluded.tasks_failed,
      completed_duration_sum = t.completed_duration_sum + excluded.completed_duration_sum,
      completed_duration_count = t.completed_duration_count + excluded.completed_duration_count`.execute(db);
}

export interface AnalyticsRange {
  organizationId: string;
  now: Date;
  /** Start of the current UTC hour, and today as `YYYY-MM-DD`. */
  hourStart: Date;
  today: string;
  /** Window starts (exclusive) and the end of the hour each falls in. */
  start7: Date;
  start7HourEnd: Date;
  start30: Date;
  start30HourEnd: Date;
  /** Monday (`YYYY-MM-DD`) of the oldest of the 12 weeks, and of the current one. */
  firstWeek: string;
  currentWeek: string;
  dimension: { type: string; value: string } | null;
}

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

export interface WindowFigures {
  active7: number;
  active30: number;
  sessions7: number;
  sessions30: number;
  completed7: number;
  failed7: number;
  completed30: number;
  failed30: number;
  durationSum30: number;
  durationCount30: number;
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
  const row = result.rows[0]!;
  const figures = {} as WindowFigures;
  for (const key of Object.keys(row) as (keyof WindowFigures)[]) figures[key] = Number(row[key] ?? 0);
  return figures;
}

export interface WeekFigures {
  week: number;
  activeMembers: number;
  sessions: number;
  tasksCompleted: number;
  tasksFailed: number;
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

export interface WeeklyKey {
  week: string;
  kind: 'm' | 's';
  key: string;
}

/**
 * Records which members and sessions each ISO week has seen (keys distinct and sorted) and adds
 * the keys seen for the first time to this connection's shard of the week's counts, in one statement.
 */
export async function addWeeklyKeys(db: Db, organizationId: string, keys: WeeklyKey[]): Promise<void> {
  if (keys.length === 0) return;
  await sql`${preparedAs('telemetry_add_weekly_keys')}
    WITH seen AS (
      INSERT INTO telemetry_weekly_keys (organization_id, week, kind, key)
      SELECT ${organizationId}, u.week, u.kind, u.key
      FROM unnest(${keys.map((k) => k.week)}::date[], ${keys.map((k) => k.kind)}::text[], ${keys.map((k) => k.key)}::text[]) AS u(week, kind, key)
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

/*
 * Unfiltered analytics from the summaries. A rolling window (start, now] is split into
 * - whole UTC days strictly between the start's day and today: telemetry_daily_members and
 *   telemetry_daily_totals (rows bounded by members × days and shards × days);
 * - the whole hours of the start's day after the start's hour, and of today before the current
 *   hour: the hourly rollup (about a day of rows per edge);
 * - the partial hour after the start, and the current hour up to now: raw events (index-only).
 * Distinct sessions come from telemetry_sessions instead (see sessionsSince).
 */

const DAY_MS = 86_400_000;
const dayStart = (day: string) => new Date(`${day}T00:00:00.000Z`);
const nextDay = (day: string) => new Date(dayStart(day).getTime() + DAY_MS);

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
  const row = result.rows[0]!;
  const figures = {} as WindowFigures;
  for (const key of Object.keys(row) as (keyof WindowFigures)[]) figures[key] = Number(row[key] ?? 0);
  return figures;
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

export async function countMembers(db: Db, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom('members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Invitations that can still be accepted (the people area owns the table). */
export async function countPendingInvites(db: Db, organizationId: string, now: Date): Promise<number> {
  const result = await sql<{ n: string }>`
    SELECT count(*) AS n FROM invitations
    WHERE organization_id = ${organizationId} AND status = 'pending' AND expires_at > ${now}`.execute(db);
  return Number(result.rows[0]?.n ?? 0);
}
