import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * The summaries of 20261122_0800, kept per session dimension (type, value), so analytics filtered
 * by a dimension reads rows bounded by days × members (or shards, or weeks) instead of every hourly
 * rollup row of the tagged sessions. Ingestion keeps them in the batch's transaction
 * (src/telemetry/dimension-store.ts), including when a session is tagged after some of its events
 * were stored: the session's earlier rollup rows are added to the new tag's summaries then.
 *
 * - `telemetry_dimension_sessions`: a tagged session's hours (a copy of its `telemetry_sessions` row).
 * - `telemetry_dimension_daily_members`, `_daily_totals`, `_weekly_keys`, `_weekly_counts`: as the
 *   unfiltered tables, counting only the events of sessions with the tag.
 *
 * Back-filled here from the session tags, the hourly rollup and the sessions already stored.
 */
/** Every tagged session's rollup rows, once per tag. */
const FACTS = `(
  SELECT t.organization_id, t.type AS dim_type, t.value AS dim_value, d.hour, d.member_id, d.session_key,
         d.tasks_completed, d.tasks_failed, d.completed_duration_sum, d.completed_duration_count
  FROM telemetry_session_dimensions t
  JOIN telemetry_hourly_sessions d ON d.organization_id = t.organization_id AND d.session_key = t.session_id
) AS f`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    -- Ingestion looks up the tags of a batch's sessions.
    CREATE INDEX telemetry_session_dimensions_session_idx ON telemetry_session_dimensions (organization_id, session_id);

    CREATE TABLE telemetry_dimension_sessions (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      dim_type text NOT NULL,
      dim_value text NOT NULL,
      session_id text NOT NULL,
      last_hour timestamptz(0) NOT NULL,
      hours timestamptz(0)[] NOT NULL,
      PRIMARY KEY (organization_id, dim_type, dim_value, session_id)
    );
    CREATE INDEX telemetry_dimension_sessions_last_hour_idx ON telemetry_dimension_sessions (organization_id, dim_type, dim_value, last_hour);

    CREATE TABLE telemetry_dimension_daily_members (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      dim_type text NOT NULL,
      dim_value text NOT NULL,
      day date NOT NULL,
      member_id text NOT NULL,
      PRIMARY KEY (organization_id, dim_type, dim_value, day, member_id)
    );

    CREATE TABLE telemetry_dimension_daily_totals (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      dim_type text NOT NULL,
      dim_value text NOT NULL,
      day date NOT NULL,
      shard smallint NOT NULL,
      tasks_completed integer NOT NULL,
      tasks_failed integer NOT NULL,
      completed_duration_sum bigint NOT NULL,
      completed_duration_count integer NOT NULL,
      PRIMARY KEY (organization_id, dim_type, dim_value, day, shard)
    );

    CREATE TABLE telemetry_dimension_weekly_keys (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      dim_type text NOT NULL,
      dim_value text NOT NULL,
      week date NOT NULL,
      kind text NOT NULL,
      key text NOT NULL,
      PRIMARY KEY (organization_id, dim_type, dim_value, week, kind, key)
    );

    CREATE TABLE telemetry_dimension_weekly_counts (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      dim_type text NOT NULL,
      dim_value text NOT NULL,
      week date NOT NULL,
      shard smallint NOT NULL,
      active_members integer NOT NULL,
      sessions integer NOT NULL,
      PRIMARY KEY (organization_id, dim_type, dim_value, week, shard)
    );

    -- Back-fill from the tags, the sessions and the hourly rollup already stored.
    INSERT INTO telemetry_dimension_sessions (organization_id, dim_type, dim_value, session_id, last_hour, hours)
    SELECT t.organization_id, t.type, t.value, s.session_id, s.last_hour, s.hours
    FROM telemetry_session_dimensions t
    JOIN telemetry_sessions s ON s.organization_id = t.organization_id AND s.session_id = t.session_id;

    INSERT INTO telemetry_dimension_daily_members (organization_id, dim_type, dim_value, day, member_id)
    SELECT DISTINCT organization_id, dim_type, dim_value, (hour AT TIME ZONE 'UTC')::date, member_id FROM ${FACTS};

    INSERT INTO telemetry_dimension_daily_totals (organization_id, dim_type, dim_value, day, shard, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
    SELECT organization_id, dim_type, dim_value, (hour AT TIME ZONE 'UTC')::date, 0,
           sum(tasks_completed), sum(tasks_failed), sum(completed_duration_sum), sum(completed_duration_count)
    FROM ${FACTS} GROUP BY 1, 2, 3, 4;

    INSERT INTO telemetry_dimension_weekly_keys (organization_id, dim_type, dim_value, week, kind, key)
    SELECT DISTINCT organization_id, dim_type, dim_value, date_trunc('week', hour AT TIME ZONE 'UTC')::date, 'm', member_id FROM ${FACTS}
    UNION
    SELECT DISTINCT organization_id, dim_type, dim_value, date_trunc('week', hour AT TIME ZONE 'UTC')::date, 's', session_key FROM ${FACTS};

    INSERT INTO telemetry_dimension_weekly_counts (organization_id, dim_type, dim_value, week, shard, active_members, sessions)
    SELECT organization_id, dim_type, dim_value, week, 0, count(*) FILTER (WHERE kind = 'm'), count(*) FILTER (WHERE kind = 's')
    FROM telemetry_dimension_weekly_keys GROUP BY 1, 2, 3, 4;
  `,
  );
}
