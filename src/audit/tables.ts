import type { Generated } from 'kysely';
import type { Json, Timestamp } from '../db/columns';

/** One audit entry (src/audit/record.ts writes it; nothing updates it). */
export interface AuditLogsTable {
  id: string;
  organization_id: string;
  /** Position in the organization's chain (1, 2, ...), from its chain head. */
  seq: Generated<string>;
  action: string;
  actor_type: string;
  actor_id: string | null;
  actor_member_id: string | null;
  target_type: string;
  target_id: string | null;
  changes: Json<Record<string, unknown>>;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
  prev_hash: Generated<string>;
  hash: Generated<string>;
}

/** The last entry of each organization's chain; its row lock serializes one organization's writes. */
export interface AuditChainHeadsTable {
  organization_id: string;
  seq: string;
  prev_hash: string;
  hash: string;
  /** When the last entry was written (null for heads written before this column existed). */
  last_at: Timestamp | null;
}

export interface AuditTables {
  audit_logs: AuditLogsTable;
  audit_chain_heads: AuditChainHeadsTable;
}
