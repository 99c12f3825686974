import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Workers with their activity, and telemetry with the rollups that keep analytics fast.
 *
 * Analytics reads `telemetry_hourly_sessions` (one row per organization, UTC hour, member and
 * session, maintained by ingestion in the same transaction as the events) for whole hours, and
 * `telemetry_events` only for the partial hours at the edges of a rolling window, through a
 * covering index. Past ISO weeks come from `telemetry_weekly_totals`. `telemetry_session_dimensions` says
 * which sessions carry a dimension.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE workers (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      runtime_url text,
      host_token_hash text NOT NULL UNIQUE,
      host_token_sealed text NOT NULL,
      created_by_member_id text NOT NULL REFERENCES members (id),
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      last_activity_at timestamptz(3)
    );
    CREATE INDEX workers_org_page_idx ON workers (organization_id, created_at DESC, id DESC);

    CREATE TABLE worker_activity (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      worker_id text NOT NULL REFERENCES workers (id) ON DELETE CASCADE,
      type text NOT NULL,
      occurred_at timestamptz(3) NOT NULL,
      detail jsonb,
      received_at timestamptz(3) NOT NULL
    );
    CREATE INDEX worker_activity_page_idx ON worker_activity (worker_id, occurred_at DESC, id DESC);

    CREATE TABLE telemetry_events (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      member_id text NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      type text NOT NULL CHECK (type IN ('user.active', 'session.active', 'session.started', 'session.ended', 'task.started', 'task.completed', 'task.failed')),
      occurred_at timestamptz(3) NOT NULL,
      received_at timestamptz(3) NOT NULL,
      session_id text,
      duration_ms integer,
      success boolean,
      dimensions jsonb NOT NULL DEFAULT '[]'
    );
    -- Covers the partial-hour reads of analytics (index-only scans).
    CREATE INDEX telemetry_events_org_time_idx ON telemetry_events (organization_id, occurred_at) INCLUDE (member_id, session_id, type, duration_ms);

    CREATE TABLE telemetry_session_dimensions (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      type text NOT NULL,
      value text NOT NULL,
      session_id text NOT NULL,
      PRIMARY KEY (organization_id, type, value, session_id)
    );

    -- session_key is the session id, or '' for events without one.
    CREATE TABLE telemetry_hourly_sessions (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      hour timestamptz(0) NOT NULL,
      member_id text NOT NULL,
      session_key text NOT NULL,
      events integer NOT NULL,
      tasks_completed integer NOT NULL,
      tasks_failed integer NOT NULL,
      completed_duration_sum bigint NOT NULL,
      completed_duration_count integer NOT NULL,
      PRIMARY KEY (organization_id, hour, member_id, session_key)
    );

    -- ISO weeks (week = its Monday): which members and sessions were seen (kind 'm' or 's'), and
    -- the totals that grow when a key is first seen, so a past week is read as one row.
    CREATE TABLE telemetry_weekly_keys (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      week date NOT NULL,
      kind text NOT NULL CHECK (kind IN ('m', 's')),
      key text NOT NULL,
      PRIMARY KEY (organization_id, week, kind, key)
    );
    CREATE TABLE telemetry_weekly_totals (
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      week date NOT NULL,
      active_members integer NOT NULL,
      sessions integer NOT NULL,
      tasks_completed integer NOT NULL,
      tasks_failed integer NOT NULL,
      PRIMARY KEY (organization_id, week)
    );
  `,
  );
}
