import type { ColumnType, Generated } from 'kysely';
import type { Json, Timestamp } from '../db/columns';

/** A nullable timestamp the insert may leave out (added by the lifecycle migration). */
type OptionalTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface WorkersTable {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  runtime_url: string | null;
  host_token_hash: string;
  /** The host token sealed with SecretBox: the service presents it to the worker's runtime. */
  host_token_sealed: string;
  created_by_member_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  last_activity_at: Timestamp | null;
  last_heartbeat_at: OptionalTimestamp;
  /** Start of the current online interval; null when offline long enough or stopped. */
  online_since: OptionalTimestamp;
  version: Generated<string | null>;
  open_sessions: Generated<number | null>;
  stopped_at: OptionalTimestamp;
  /** Permission keys: the most the worker's own OAuth tokens may do (docs/workers-and-usage.md#workers-as-oauth-clients). */
  ceiling: ColumnType<string[], string[] | undefined, string[]>;
}

/** One continuous online run of a worker (see the 20261123_0500_worker_lifecycle migration). */
export interface WorkerOnlineIntervalsTable {
  worker_id: string;
  organization_id: string;
  started_at: Timestamp;
  ended_at: Timestamp;
}

export interface WorkerActivityTable {
  id: string;
  organization_id: string;
  worker_id: string;
  type: string;
  occurred_at: Timestamp;
  detail: Json<Record<string, unknown> | null> | null;
  received_at: Timestamp;
}

export interface WorkerTables {
  workers: WorkersTable;
  worker_activity: WorkerActivityTable;
  worker_online_intervals: WorkerOnlineIntervalsTable;
}
