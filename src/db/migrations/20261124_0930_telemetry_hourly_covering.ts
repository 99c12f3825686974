import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Analytics reads about a day of the hourly rollup per window edge (the whole hours of the start's
 * day and of today); through the primary key that is one heap page per row (~440 page reads per
 * edge at 1M events, rows of one hour written by many batches). These indexes carry what the edges
 * read, so they are index-only scans (~11 pages per edge); the same for the per-dimension hourly
 * rollup that filtered analytics reads. The counters are in them, so an update of a row is no
 * longer HOT: ingestion writes one more index entry per updated row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE INDEX telemetry_hourly_sessions_edges_idx ON telemetry_hourly_sessions (organization_id, hour)
      INCLUDE (member_id, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count);
    CREATE INDEX telemetry_dimension_hourly_edges_idx ON telemetry_dimension_hourly (organization_id, dim_type, dim_value, hour)
      INCLUDE (member_id, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count);
  `,
  );
}
