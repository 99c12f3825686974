import type { Timestamp } from '../db/columns';

/** Link tokens of src/users (docs/accounts.md#link-tokens): only the SHA-256 of each is stored. */
export interface AccountTokensTable {
  id: string;
  user_id: string;
  purpose: 'verify_email' | 'password_reset' | 'email_change';
  token_hash: string;
  /** The address an `email_change` token confirms (null for the other purposes). */
  new_email: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: Timestamp | null;
}

export interface UserTables {
  account_tokens: AccountTokensTable;
}
