import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { DB } from '../db/schema';

type Db = Kysely<DB> | Transaction<DB>;

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

/** One multi-row INSERT: the batch is stored whole or the statement fails. */
export async function insertEvents(db: Db, rows: EventRow[]): Promise<void> {
  await db
    .insertInto('telemetry_events')
    .values(
      rows.map((r) => ({
        id: r.id,
        organization_id: r.organizationId,
        member_id: r.memberId,
        type: r.type,
        occurred_at: r.occurredAt,
        received_at: r.receivedAt,
        session_id: r.sessionId,
        duration_ms: r.durationMs,
        success: r.success,
        dimensions: JSON.stringify(r.dimensions),
      })),
    )
    .execute();
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
export async function addHourly(db: Db, deltas: HourlyDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  await db
    .insertInto('telemetry_hourly_sessions')
    .values(
      deltas.map((d) => ({
        organization_id: d.organizationId,
        hour: d.hour,
        member_id: d.memberId,
        session_key: d.sessionKey,
        events: d.events,
        tasks_completed: d.tasksCompleted,
        tasks_failed: d.tasksFailed,
        completed_duration_sum: d.completedDurationSum,
        completed_duration_count: d.completedDurationCount,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['organization_id', 'hour', 'member_id', 'session_key']).doUpdateSet({
        events: sql`telemetry_hourly_sessions.events + excluded.events`,
        tasks_completed: sql`telemetry_hourly_sessions.tasks_completed + excluded.tasks_completed`,
        tasks_failed: sql`telemetry_hourly_sessions.tasks_failed + excluded.tasks_failed`,
        completed_duration_sum: sql`telemetry_hourly_sessions.completed_duration_sum + excluded.completed_duration_sum`,
        completed_duration_count: sql`telemetry_hourly_sessions.completed_duration_count + excluded.completed_duration_count`,
      }),
    )
    .execute();
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

/** Totals of complete past weeks, maintained by ingestion: one row per week with events. */
export async function pastWeekTotals(db: Db, organizationId: string, fromWeek: string, beforeWeek: string): Promise<(WeekFigures & { weekStart: string })[]> {
  const rows = await db
    .selectFrom('telemetry_weekly_totals')
    .select([sql<string>`week::text`.as('weekStart'), 'active_members', 'sessions', 'tasks_completed', 'tasks_failed'])
    .where('organization_id', '=', organizationId)
    .where('week', '>=', fromWeek)
    .where('week', '<', beforeWeek)
    .execute();
  return rows.map((row) => ({
    week: Math.round((Date.parse(`${row.weekStart}T00:00:00Z`) - Date.parse(`${fromWeek}T00:00:00Z`)) / (7 * 86_400_000)),
    weekStart: row.weekStart,
    activeMembers: row.active_members,
    sessions: row.sessions,
    tasksCompleted: row.tasks_completed,
    tasksFailed: row.tasks_failed,
  }));
}

export interface WeeklyKey {
  organizationId: string;
  week: string;
  kind: 'm' | 's';
  key: string;
}

/** Records which members and sessions each ISO week has seen; returns the keys seen for the first time. */
export async function addWeeklyKeys(db: Db, keys: WeeklyKey[]): Promise<{ week: string; kind: 'm' | 's' }[]> {
  if (keys.length === 0) return [];
  return db
    .insertInto('telemetry_weekly_keys')
    .values(keys.map((k) => ({ organization_id: k.organizationId, week: k.week, kind: k.kind, key: k.key })))
    .onConflict((oc) => oc.doNothing())
    .returning([sql<string>`week::text`.as('week'), 'kind'])
    .execute();
}

export interface WeeklyDelta {
  organizationId: string;
  week: string;
  activeMembers: number;
  sessions: number;
  tasksCompleted: number;
  tasksFailed: number;
}

export async function addWeeklyTotals(db: Db, deltas: WeeklyDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  await db
    .insertInto('telemetry_weekly_totals')
    .values(
      deltas.map((d) => ({
        organization_id: d.organizationId,
        week: d.week,
        active_members: d.activeMembers,
        sessions: d.sessions,
        tasks_completed: d.tasksCompleted,
        tasks_failed: d.tasksFailed,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['organization_id', 'week']).doUpdateSet({
        active_members: sql`telemetry_weekly_totals.active_members + excluded.active_members`,
        sessions: sql`telemetry_weekly_totals.sessions + excluded.sessions`,
        tasks_completed: sql`telemetry_weekly_totals.tasks_completed + excluded.tasks_completed`,
        tasks_failed: sql`telemetry_weekly_totals.tasks_failed + excluded.tasks_failed`,
      }),
    )
    .execute();
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

export async function organizationPlan(db: Db, organizationId: string): Promise<string | undefined> {
  const row = await db.selectFrom('organizations').select('plan').where('id', '=', organizationId).executeTakeFirst();
  return row?.plan;
}
