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
 * take seconds), the session dimension tags and the hourly and weekly rollups derived from those events.
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

  // ISO-week keys of the seeded rows, then the weekly totals recomputed from the rollups, so they
  // agree with whatever the organization held before.
  await sql`
    INSERT INTO telemetry_weekly_keys (organization_id, week, kind, key)
    SELECT DISTINCT organization_id, date_trunc('week', occurred_at AT TIME ZONE 'UTC')::date, 'm', member_id
    FROM telemetry_events WHERE organization_id = ${options.organizationId} AND session_id LIKE ${`${tag}-%`}
    UNION
    SELECT DISTINCT organization_id, date_trunc('week', occurred_at AT TIME ZONE 'UTC')::date, 's', session_id
    FROM telemetry_events WHERE organization_id = ${options.organizationId} AND session_id LIKE ${`${tag}-%`}
    ON CONFLICT DO NOTHING`.execute(db);
  await sql`
    INSERT INTO telemetry_weekly_totals (organization_id, week, active_members, sessions, tasks_completed, tasks_failed)
    SELECT k.organization_id, k.week, count(*) FILTER (WHERE k.kind = 'm'), count(*) FILTER (WHERE k.kind = 's'),
           coalesce(max(t.completed), 0), coalesce(max(t.failed), 0)
    FROM telemetry_weekly_keys k
    LEFT JOIN (
      SELECT date_trunc('week', hour AT TIME ZONE 'UTC')::date AS week, sum(tasks_completed) AS completed, sum(tasks_failed) AS failed
      FROM telemetry_hourly_sessions WHERE organization_id = ${options.organizationId} GROUP BY 1
    ) t ON t.week = k.week
    WHERE k.organization_id = ${options.organizationId}
    GROUP BY k.organization_id, k.week
    ON CONFLICT (organization_id, week) DO UPDATE SET
      active_members = excluded.active_members, sessions = excluded.sessions,
      tasks_completed = excluded.tasks_completed, tasks_failed = excluded.tasks_failed`.execute(db);

  return { events: options.events, sessions, tag };
}
