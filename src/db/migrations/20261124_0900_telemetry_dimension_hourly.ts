import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * The hourly rollup kept per session dimension, per member (no session key: filtered analytics
 * counts sessions from `telemetry_dimension_sessions`). The edges of a filtered window (the whole
 * hours of the start's day and of today) read a day of these rows instead of a day of the
 * organization's hourly rollup with a probe of the tag per row, a cost that grew with the data.
 * Ingestion keeps it with the other per-dimension summaries (src/telemetry/dimension-store.ts).
 *
 * Back-filled here from the session tags and the hourly rollup already stored.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE telemetry_dimension_hourly (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      dim_type text NOT NULL,
      dim_value text NOT NULL,
      hour timestamptz(0) NOT NULL,
      member_id text NOT NULL,
      tasks_completed integer NOT NULL,
      tasks_failed integer NOT NULL,
      completed_duration_sum bigint NOT NULL,
      completed_duration_count integer NOT NULL,
      PRIMARY KEY (organization_id, dim_type, dim_value, hour, member_id)
    );

    INSERT INTO telemetry_dimension_hourly (organization_id, dim_type, dim_value, hour, member_id, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
    SELECT t.organization_id, t.type, t.value, d.hour, d.member_id,
           sum(d.tasks_completed), sum(d.tasks_failed), sum(d.completed_duration_sum), sum(d.completed_duration_count)
    FROM telemetry_session_dimensions t
    JOIN telemetry_hourly_sessions d ON d.organization_id = t.organization_id AND d.session_key = t.session_id
    GROUP BY 1, 2, 3, 4, 5;
  `,
  );
}
