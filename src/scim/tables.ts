import type { Timestamp } from '../db/columns';

/** SCIM bearer tokens; only the SHA-256 hash of a token is stored. */
export interface ScimTokensTable {
  id: string;
  organization_id: string;
  name: string;
  prefix: string;
  token_hash: string;
  created_by_member_id: string | null;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface ScimTables {
  scim_tokens: ScimTokensTable;
}
