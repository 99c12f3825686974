import type { ColumnType } from 'kysely';
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
  directory_users: DirectoryUsersTable;
  directory_group_members: DirectoryGroupMembersTable;
  directory_user_counts: DirectoryUserCountsTable;
}

/** Each organization's number of directory users, kept by triggers on directory_users (never written here). */
export interface DirectoryUserCountsTable {
  organization_id: string;
  n: number;
}

/**
 * A SCIM User as the identity provider keeps it (docs/scim.md#directory-users-and-linking): linked to a member
 * while `member_id` is set, else `link_reason` says why not.
 */
export interface DirectoryUsersTable {
  id: string;
  organization_id: string;
  user_name: string;
  /** lower(user_name): unique per organization. */
  user_name_normalized: string;
  external_id: string | null;
  active: boolean;
  attributes: ColumnType<Record<string, unknown>, string, string>;
  /** The chosen sign-in e-mail (null when no value is an address). */
  email: string | null;
  email_normalized: string | null;
  member_id: string | null;
  link_reason: LinkReason | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type LinkReason = 'no_valid_email' | 'email_belongs_to_other_account' | 'email_shared_with' | 'member_limit';

/** A SCIM Group's members: directory users (the team holds the linked ones' members). */
export interface DirectoryGroupMembersTable {
  team_id: string;
  directory_user_id: string;
  organization_id: string;
  created_at: Timestamp;
}
