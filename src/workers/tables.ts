import type { Json, Timestamp } from '../db/columns';

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
}
