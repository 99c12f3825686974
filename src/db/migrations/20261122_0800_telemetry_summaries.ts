import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Telemetry summaries that keep analytics cost nearly independent of the data size, and ingestion
 * free of per-organization hot rows. All are maintained by ingestion in the same statement as the
 * events.
 *
 * - `telemetry_sessions`: one row per session: the sorted UTC hours it has events in and the
 *   latest of them. "Sessions with an event in [a, b)" (whole hours) is an index-only count over
 *   `(organization_id, last_hour)` plus a check of the few sessions whose last hour is later.
 * - `telemetry_daily_members`: which members have events on a UTC day (bounded by members × days).
 * - `telemetry_daily_totals`: task counts and durations per UTC day, sharded by the writing
 *   connection (`pg_backend_pid() % 16`), so concurrent batches do not queue on one row.
 * - `telemetry_weekly_counts`: distinct members and sessions per ISO week (from the keys first seen
 *   in `telemetry_weekly_keys`), sharded the same way; replaces the single-row-per-week
 *   `telemetry_weekly_totals`, the hot row every batch of an organization updated.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE telemetry_sessions (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      session_id text NOT NULL,
      last_hour timestamptz(0) NOT NULL,
      hours timestamptz(0)[] NOT NULL,
      PRIMARY KEY (organization_id, session_id)
    );
    CREATE INDEX telemetry_sessions_last_hour_idx ON telemetry_sessions (organization_id, last_hour);

    CREATE TABLE telemetry_daily_members (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      day date NOT NULL,
      member_id text NOT NULL,
      PRIMARY KEY (organization_id, day, member_id)
    );

    CREATE TABLE telemetry_daily_totals (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      day date NOT NULL,
      shard smallint NOT NULL,
      tasks_completed integer NOT NULL,
      tasks_failed integer NOT NULL,
      completed_duration_sum bigint NOT NULL,
      completed_duration_count integer NOT NULL,
      PRIMARY KEY (organization_id, day, shard)
    );

    CREATE TABLE telemetry_weekly_counts (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      week date NOT NULL,
      shard smallint NOT NULL,
      active_members integer NOT NULL,
      sessions integer NOT NULL,
      PRIMARY KEY (organization_id, week, shard)
    );

    -- Backfill from what the 0500 tables hold.
    INSERT INTO telemetry_sessions (organization_id, session_id, last_hour, hours)
    SELECT organization_id, session_key, max(hour), array_agg(DISTINCT hour ORDER BY hour)
    FROM telemetry_hourly_sessions WHERE session_key <> '' GROUP BY organization_id, session_key;

    INSERT INTO telemetry_daily_members (organization_id, day, member_id)
    SELECT DISTINCT organization_id, (hour AT TIME ZONE 'UTC')::date, member_id FROM telemetry_hourly_sessions;

    INSERT INTO telemetry_daily_totals (organization_id, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
    SELECT organization_id, (hour AT TIME ZONE 'UTC')::date, 0, sum(tasks_completed), sum(tasks_failed), sum(completed_duration_sum), sum(completed_duration_count)
    FROM telemetry_hourly_sessions GROUP BY 1, 2;

    INSERT INTO telemetry_weekly_counts (organization_id, week, shard, active_members, sessions)
    SELECT organization_id, week, 0, count(*) FILTER (WHERE kind = 'm'), count(*) FILTER (WHERE kind = 's')
    FROM telemetry_weekly_keys GROUP BY organization_id, week;

    DROP TABLE telemetry_weekly_totals;
  `,
  );
}
