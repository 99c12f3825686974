import type { ColumnType, Generated } from 'kysely';
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
  /** The API key a service account acted through (null otherwise). */
  actor_api_key_id: string | null;
  /** The OAuth client of the access token the change was made with (null otherwise). */
  actor_client_id: string | null;
  /** The actor of a token exchanged for a member (`act.sub`: the worker); null otherwise. */
  actor_act_sub: ColumnType<string | null, string | null | undefined, string | null>;
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
  /** Position of the latest checkpoint (0: none yet); written by the checkpoint job only. */
  checkpoint_seq: Generated<string>;
  checkpoint_at: Generated<Timestamp | null>;
}

/** The service's Ed25519 audit key (one row, id 'audit'); the private key sealed with SECRET_KEY. */
export interface AuditSigningKeysTable {
  id: string;
  /** The 32-byte public key, base64. */
  public_key: string;
  private_key_sealed: string;
  created_at: Timestamp;
}

/** A signed checkpoint: the note over (origin, seq, head). Kept when retention prunes entries. */
export interface AuditCheckpointsTable {
  id: string;
  organization_id: string;
  /** The entry count it signs (the chain position of its head entry). */
  seq: string;
  /** The head entry's hash (hex, as audit_logs.hash). */
  head: string;
  note: string;
  created_at: Timestamp;
}

export interface AuditTables {
  audit_logs: AuditLogsTable;
  audit_chain_heads: AuditChainHeadsTable;
  audit_signing_keys: AuditSigningKeysTable;
  audit_checkpoints: AuditCheckpointsTable;
}
