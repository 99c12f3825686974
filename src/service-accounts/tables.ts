import type { ColumnType } from 'kysely';
import type { Timestamp } from '../db/columns';

/** A service account: a member of its organization with no user (docs/service-accounts.md). */
export interface ServiceAccountsTable {
  id: string;
  organization_id: string;
  /** Its member (`members.type = 'service_account'`); the account is deleted when that member is removed. */
  member_id: string;
  name: string;
  description: string | null;
  /** Set while disabled: none of its credentials works until it is enabled again. */
  disabled_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_by_member_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** When one of its credentials last worked (stamped at most once a minute). */
  last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** A client secret of a service account: only its SHA-256 is stored. */
export interface ServiceAccountSecretsTable {
  id: string;
  organization_id: string;
  service_account_id: string;
  secret_hash: string;
  created_at: Timestamp;
  expires_at: Timestamp | null;
  last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface ServiceAccountTables {
  service_accounts: ServiceAccountsTable;
  service_account_secrets: ServiceAccountSecretsTable;
}
