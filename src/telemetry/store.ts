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

export interface DailyDelta {
  organizationId: string;
  day: string;
  memberId: string;
  sessionKey: string;
  events: number;
  tasksCompleted: number;
  tasksFailed: number;
  completedDurationSum: number;
  completedDurationCount: number;
}

/** Adds a batch's per-day counts to the rollup (rows distinct and sorted by key). */
export async function addDaily(db: Db, deltas: DailyDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  await db
    .insertInto('telemetry_daily_sessions')
    .values(
      deltas.map((d) => ({
        organization_id: d.organizationId,
        day: d.day,
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
      oc.columns(['organization_id', 'day', 'member_id', 'session_key']).doUpdateSet({
        events: sql`telemetry_daily_sessions.events + excluded.events`,
        tasks_completed: sql`telemetry_daily_sessions.tasks_completed + excluded.tasks_completed`,
        tasks_failed: sql`telemetry_daily_sessions.tasks_failed + excluded.tasks_failed`,
        completed_duration_sum: sql`telemetry_daily_sessions.completed_duration_sum + excluded.completed_duration_sum`,
        completed_duration_count: sql`telemetry_daily_sessions.completed_duration_count + excluded.completed_duration_count`,
      }),
    )
    .execute();
}

export interface AnalyticsRange {
  organizationId: string;
  now: Date;
  /** 00:00 UTC of today, as a Date and as `YYYY-MM-DD`. */
  todayStart: Date;
  today: string;
  /** Window starts (exclusive) and the end of the day each falls in. */
  start7: Date;
  start7Day: string;
  start7DayEnd: Date;
  start30: Date;
  start30Day: string;
  start30DayEnd: Date;
  /** Monday (`YYYY-MM-DD`) of the oldest of the 12 weeks. */
  firstWeek: string;
  dimension: { type: string; value: string } | null;
}

/**
 * The rows analytics aggregates, from two sources so no window reads a full range of raw events:
 * - `d`: the daily rollup for whole UTC days before today (one row per day, member and session);
 * - `t`, `h7`, `h30`: raw events of today up to now, and of the partial first day of the 7- and
 *   30-day windows (index-only scans of telemetry_events_org_time_idx).
 * Each event is in exactly one row of one source for any window, so sums do not double count.
 */
function facts(r: AnalyticsRange): RawBuilder<unknown> {
  const tagged = r.dimension
    ? sql`SELECT s.session_id FROM telemetry_session_dimensions s
          WHERE s.organization_id = ${r.organizationId} AND s.type = ${r.dimension.type} AND s.value = ${r.dimension.value}`
    : null;
  const dailyTag = tagged ? sql`AND d.session_key IN (${tagged})` : sql``;
  const rawTag = tagged ? sql`AND e.session_id IN (${tagged})` : sql``;
  const raw = (src: string, from: RawBuilder<unknown>, to: RawBuilder<unknown>) => sql`
    SELECT ${src}::text AS src, ${src === 't' ? sql`${r.today}::date` : sql`NULL::date`} AS day, e.member_id,
           coalesce(e.session_id, '') AS session_key,
           (e.type = 'task.completed')::int AS completed, (e.type = 'task.failed')::int AS failed,
           CASE WHEN e.type = 'task.completed' THEN coalesce(e.duration_ms, 0) ELSE 0 END::bigint AS dur_sum,
           CASE WHEN e.type = 'task.completed' AND e.duration_ms IS NOT NULL THEN 1 ELSE 0 END AS dur_n
    FROM telemetry_events e
    WHERE e.organization_id = ${r.organizationId} AND ${from} AND ${to} ${rawTag}`;
  return sql`
    SELECT 'd'::text AS src, d.day, d.member_id, d.session_key, d.tasks_completed AS completed, d.tasks_failed AS failed,
           d.completed_duration_sum AS dur_sum, d.completed_duration_count AS dur_n
    FROM telemetry_daily_sessions d
    WHERE d.organization_id = ${r.organizationId} AND d.day >= ${r.firstWeek}::date AND d.day < ${r.today}::date ${dailyTag}
    UNION ALL ${raw('t', sql`e.occurred_at >= ${r.todayStart}`, sql`e.occurred_at <= ${r.now}`)}
    UNION ALL ${raw('h7', sql`e.occurred_at > ${r.start7}`, sql`e.occurred_at < ${r.start7DayEnd}`)}
    UNION ALL ${raw('h30', sql`e.occurred_at > ${r.start30}`, sql`e.occurred_at < ${r.start30DayEnd}`)}`;
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

export async function windowFigures(db: Db, r: AnalyticsRange): Promise<WindowFigures> {
  const in7 = sql`((src = 'd' AND day > ${r.start7Day}::date) OR src IN ('t', 'h7'))`;
  const in30 = sql`((src = 'd' AND day > ${r.start30Day}::date) OR src IN ('t', 'h30'))`;
  const result = await sql<Record<keyof WindowFigures, string | number | null>>`
    WITH f AS (${facts(r)})
    SELECT count(DISTINCT member_id) FILTER (WHERE ${in7}) AS active7,
           count(DISTINCT member_id) FILTER (WHERE ${in30}) AS active30,
           count(DISTINCT session_key) FILTER (WHERE ${in7} AND session_key <> '') AS sessions7,
           count(DISTINCT session_key) FILTER (WHERE ${in30} AND session_key <> '') AS sessions30,
           coalesce(sum(completed) FILTER (WHERE ${in7}), 0) AS completed7,
           coalesce(sum(failed) FILTER (WHERE ${in7}), 0) AS failed7,
           coalesce(sum(completed) FILTER (WHERE ${in30}), 0) AS completed30,
           coalesce(sum(failed) FILTER (WHERE ${in30}), 0) AS failed30,
           coalesce(sum(dur_sum) FILTER (WHERE ${in30}), 0) AS "durationSum30",
           coalesce(sum(dur_n) FILTER (WHERE ${in30}), 0) AS "durationCount30"
    FROM f`.execute(db);
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

/** Per ISO week (0 = oldest of the 12); weeks without events are absent. */
export async function weeklyFigures(db: Db, r: AnalyticsRange): Promise<WeekFigures[]> {
  const result = await sql<Record<keyof WeekFigures, string | number>>`
    WITH f AS (${facts(r)})
    SELECT (day - ${r.firstWeek}::date) / 7 AS week,
           count(DISTINCT member_id) AS "activeMembers",
           count(DISTINCT session_key) FILTER (WHERE session_key <> '') AS sessions,
           coalesce(sum(completed), 0) AS "tasksCompleted",
           coalesce(sum(failed), 0) AS "tasksFailed"
    FROM f
    WHERE src IN ('d', 't')
    GROUP BY 1`.execute(db);
  return result.rows.map((row) => ({
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

export async function organizationPlan(db: Db, organizationId: string): Promise<string | undefined> {
  const row = await db.selectFrom('organizations').select('plan').where('id', '=', organizationId).executeTakeFirst();
  return row?.plan;
}
