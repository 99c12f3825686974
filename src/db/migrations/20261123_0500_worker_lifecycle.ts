import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Worker lifecycle (docs/workers-and-usage.md#worker-lifecycle-and-metered-usage) and the rollup metered usage reads (docs/workers-and-usage.md#plans-limits-and-usage).
 *
 * A heartbeat stamps `last_heartbeat_at` and extends the worker's current online interval in the
 * same statement: `online_since` is the start of that interval, and `worker_online_intervals`
 * holds one row per continuous online run, its `ended_at` the last heartbeat plus
 * WORKER_STALE_AFTER (cut short by a stop). Monthly usage sums the overlap of these rows with the
 * month, so it never reads heartbeats one by one. The intervals outlive a deleted worker (what was
 * used stays billed), so they reference the organization only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE workers ADD COLUMN last_heartbeat_at timestamptz(3);
    ALTER TABLE workers ADD COLUMN online_since timestamptz(3);
    ALTER TABLE workers ADD COLUMN version text CHECK (char_length(version) <= 64);
    ALTER TABLE workers ADD COLUMN open_sessions integer CHECK (open_sessions >= 0);
    ALTER TABLE workers ADD COLUMN stopped_at timestamptz(3);

    CREATE TABLE worker_online_intervals (
      worker_id text NOT NULL,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      started_at timestamptz(3) NOT NULL,
      ended_at timestamptz(3) NOT NULL CHECK (ended_at >= started_at),
      PRIMARY KEY (worker_id, started_at)
    );
    -- A month's usage: the intervals that end after the month starts.
    CREATE INDEX worker_online_intervals_org_end_idx ON worker_online_intervals (organization_id, ended_at) INCLUDE (worker_id, started_at)
  `,
  );
}
