import { sql, type Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import type { DB } from '../../src/db/schema';

export interface TelemetrySeedOptions {
  organizationId: string;
  /** Members the events belong to (existing rows of `members` in the organization). */
  memberIds: string[];
  /** Number of events to write. */
  events: number;
  /** Spread over the `days` before `now`, evenly by session. */
  days: number;
  now?: Date;
  /** Events per session (default 20); a session's events lie within minutes of each other. */
  eventsPerSession?: number;
  /** Each session's first event is tagged `{type: 'team', value: 'team-<n>'}`, n < teams (default 5). */
  teams?: number;
  /** Rows per INSERT statement (default 100000), to stay under the pool's statement timeout. */
  chunk?: number;
}

export interface TelemetrySeedResult {
  events: number;
  sessions: number;
  /** Prefix of the seeded event ids and session ids, unique per call. */
  tag: string;
}

/**
 * Seeds telemetry for one organization straight into the tables analytics reads, the way
 * ingestion would have left them: events (INSERT … SELECT FROM generate_series, so a million rows
 * take seconds), the session dimension tags, the hourly rollup and the summaries (sessions' hours, daily members
 * and totals, weekly keys and counts) derived from those events.
 *
 * The mix per session: `session.started` (tagged with a team), then task.started /
 * task.completed (duration up to 10 min) / task.failed / session.active / user.active, and
 * `session.ended` last. Deterministic for given options except for the id tag.
 */
export async function seedTelemetry(db: Kysely<DB>, options: TelemetrySeedOptions): Promise<TelemetrySeedResult> {
  if (options.memberIds.length === 0) throw new Error('seedTelemetry needs at least one member');
  const now = options.now ?? new Date();
  const perSession = Math.max(2, options.eventsPerSession ?? 20);
  const teams = Math.max(1, options.teams ?? 5);
  const chunk = options.chunk ?? 100_000;
  const sessions = Math.ceil(options.events / perSession);
  const tag = `s${randomBytes(4).toString('hex')}`;
  const spanMs = options.days * 86_400_000;
  const members = options.memberIds;

  for (let from = 0; from < options.events; from += chunk) {
    const to = Math.min(options.events, from + chunk) - 1;
    await sql`
      INSERT INTO telemetry_events (id, organization_id, member_id, type, occurred_at, received_at, session_id, duration_ms, success, dimensions)
      SELECT 'tev_' || ${tag} || '_' || g,
             ${options.organizationId},
             (${members}::text[])[1 + ((s * 2654435761) % ${members.length})],
             ev.type,
             ts,
             ts,
             ${tag} || '-' || s,
             CASE WHEN ev.type = 'task.completed' THEN ((g * 7919) % 600000)::int END,
             CASE WHEN ev.type = 'task.completed' THEN true WHEN ev.type = 'task.failed' THEN false END,
             CASE WHEN k = 0 THEN jsonb_build_array(jsonb_build_object('type', 'team', 'value', 'team-' || (s % ${teams})))
                  ELSE '[]'::jsonb END
      FROM generate_series(${from}::bigint, ${to}::bigint) AS g
      CROSS JOIN LATERAL (SELECT g / ${perSession} AS s, g % ${perSession} AS k) AS p
      CROSS JOIN LATERAL (
        SELECT ${now}::timestamptz
                 - make_interval(secs => (${spanMs}::float8 * (s + 0.5) / ${sessions}) / 1000.0)
                 + make_interval(secs => (k - ${perSession}) * 30) AS ts
      ) AS t
      CROSS JOIN LATERAL (
        SELECT CASE
                 WHEN k = 0 THEN 'session.started'
                 WHEN k = ${perSession - 1} THEN 'session.ended'
                 ELSE (ARRAY['task.started', 'task.started', 'task.started', 'task.completed', 'task.completed', 'task.completed',
                             'task.failed', 'session.active', 'user.active', 'task.completed'])[1 + ((g * 7) % 10)]
               END AS type
      ) AS ev`.execute(db);
  }

  await sql`
    INSERT INTO telemetry_session_dimensions (organization_id, type, value, session_id)
    SELECT DISTINCT e.organization_id, d ->> 'type', d ->> 'value', e.session_id
    FROM telemetry_events e CROSS JOIN LATERAL jsonb_array_elements(e.dimensions) AS d
    WHERE e.organization_id = ${options.organizationId} AND e.session_id LIKE ${`${tag}-%`} AND e.dimensions <> '[]'::jsonb
    ON CONFLICT DO NOTHING`.execute(db);

  // The same rollup ingestion maintains, computed from the seeded rows in one pass.
  await sql`
    INSERT INTO telemetry_hourly_sessions (organization_id, hour, member_id, session_key, events, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
    SELECT organization_id, date_trunc('hour', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', member_id, coalesce(session_id, ''), count(*),
           count(*) FILTER (WHERE type = 'task.completed'), count(*) FILTER (WHERE type = 'task.failed'),
           coalesce(sum(duration_ms) FILTER (WHERE type = 'task.completed'), 0),
           count(duration_ms) FILTER (WHERE type = 'task.completed')
    FROM telemetry_events
    WHERE organization_id = ${options.organizationId} AND session_id LIKE ${`${tag}-%`}
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (organization_id, hour, member_id, session_key) DO UPDATE SET
      events = telemetry_hourly_sessions.events + excluded.events,
      tasks_completed = telemetry_hourly_sessions.tasks_completed + excluded.tasks_completed,
      tasks_failed = telemetry_hourly_sessions.tasks_failed + excluded.tasks_failed,
      completed_duration_sum = telemetry_hourly_sessions.completed_duration_sum + excluded.completed_duration_sum,
      completed_duration_count = telemetry_hourly_sessions.completed_duration_count + excluded.completed_duration_count`.execute(db);

  // The summaries ingestion maintains, derived from the seeded rows (weekly counts and daily
  // totals recomputed for the whole organization so they agree with whatever it held before).
  const seeded = sql`organization_id = ${options.organizationId} AND session_id LIKE ${`${tag}-%`}`;
  await sql`
    INSERT INTO telemetry_sessions (organization_id, session_id, last_hour, hours)
    SELECT organization_id, session_key, max(hour), array_agg(hour ORDER BY hour)
    FROM telemetry_hourly_sessions WHERE organization_id = ${options.organizationId} AND session_key LIKE ${`${tag}-%`}
    GROUP BY organization_id, session_key
    ON CONFLICT DO NOTHING`.execute(db);
  await sql`
    INSERT INTO telemetry_daily_members (organization_id, day, member_id)
    SELECT DISTINCT organization_id, (occurred_at AT TIME ZONE 'UTC')::date, member_id FROM telemetry_events WHERE ${seeded}
    ON CONFLICT DO NOTHING`.execute(db);
  await sql`DELETE FROM telemetry_daily_totals WHERE organization_id = ${options.organizationId}`.execute(db);
  await sql`
    INSERT INTO telemetry_daily_totals (organization_id, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
    SELECT organization_id, (hour AT TIME ZONE 'UTC')::date, 0, sum(tasks_completed), sum(tasks_failed), sum(completed_duration_sum), sum(completed_duration_count)
    FROM telemetry_hourly_sessions WHERE organization_id = ${options.organizationId} GROUP BY 1, 2`.execute(db);
  await sql`
    INSERT INTO telemetry_weekly_keys (organization_id, week, kind, key)
    SELECT DISTINCT organization_id, date_trunc('week', occurred_at AT TIME ZONE 'UTC')::date, 'm', member_id FROM telemetry_events WHERE ${seeded}
    UNION
    SELECT DISTINCT organization_id, date_trunc('week', occurred_at AT TIME ZONE 'UTC')::date, 's', session_id FROM telemetry_events WHERE ${seeded}
    ON CONFLICT DO NOTHING`.execute(db);
  await sql`DELETE FROM telemetry_weekly_counts WHERE organization_id = ${options.organizationId}`.execute(db);
  await sql`
    INSERT INTO telemetry_weekly_counts (organization_id, week, shard, active_members, sessions)
    SELECT organization_id, week, 0, count(*) FILTER (WHERE kind = 'm'), count(*) FILTER (WHERE kind = 's')
    FROM telemetry_weekly_keys WHERE organization_id = ${options.organizationId} GROUP BY organization_id, week`.execute(db);

  // As autovacuum would have after this many inserts: visibility map set, so the narrow summary
  // indexes are read index-only.
  for (const table of ['telemetry_sessions', 'telemetry_daily_members', 'telemetry_daily_totals', 'telemetry_weekly_counts', 'telemetry_hourly_sessions']) {
    await sql`VACUUM (ANALYZE) ${sql.table(table)}`.execute(db);
  }

  return { events: options.events, sessions, tag };
}
