import type { Generated } from 'kysely';
import type { Json, Timestamp } from '../db/columns';

/** The sinks a stream can deliver to (docs/audit.md, "Streams"). */
export type StreamType = 'https' | 'splunk_hec' | 'datadog' | 's3';

/** An audit log stream (src/audit-streams owns it; the row is also its delivery job). */
export interface AuditStreamsTable {
  id: string;
  organization_id: string;
  type: StreamType;
  /** The sink's settings without its secrets. */
  config: Json<Record<string, unknown>>;
  /** The sink's secrets as JSON, sealed with SECRET_KEY (never shown again). */
  secrets_sealed: string;
  enabled: Generated<boolean>;
  /** Chain position of the last entry the sink accepted. */
  cursor_seq: string;
  cursor_id: string | null;
  /** Chain position of the last checkpoint the sink accepted. */
  checkpoint_seq: string;
  last_delivered_at: Timestamp | null;
  last_error: string | null;
  /** Start of the current run of failed batches (null after a success). */
  failing_since: Timestamp | null;
  failures: Generated<number>;
  /** While the organization is locked for deletion: the deletion entry's position, the last one delivered (null otherwise). */
  locked_through_seq: Generated<string | null>;
  /** Set by a 401/403 or 3 days of failures; cleared by a change of config. */
  paused_at: Timestamp | null;
  next_attempt_at: Timestamp;
  lease_token: string | null;
  lease_until: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AuditStreamTables {
  audit_streams: AuditStreamsTable;
}
