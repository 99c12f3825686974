import type { ColumnType } from 'kysely';
import type { Timestamp } from '../db/columns';

type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type AuthorizationClientType = 'organization' | 'metadata_document' | 'dynamic' | 'worker';

/** A member's authorization of an OAuth client (`oag_`, docs/oauth.md#authorizations). */
export interface OAuthAuthorizationsTable {
  id: string;
  organization_id: string;
  member_id: string;
  client_id: string;
  client_type: AuthorizationClientType;
  /** The client's name as consent showed it (a metadata document's is the client's own claim). */
  client_name: string;
  scopes: string[];
  resource: string;
  /** SHA-256 of `Grant:<grant id>`, as oauth_records keys the grant's tokens. */
  grant_key: string | null;
  /** A delegation's (client type `worker`): SHA-256 of the subject token it answered; null otherwise. */
  subject_token_hash: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  last_used_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
}

export type ThirdPartyClients = 'allow' | 'deny' | 'allowList';

/** The organization's policy for outside clients (docs/oauth.md#the-organizations-policy); no row: the defaults. */
export interface OrganizationOAuthPoliciesTable {
  organization_id: string;
  third_party_clients: ThirdPartyClients;
  allow_list: string[];
  max_scopes: string[] | null;
  updated_at: Timestamp;
}

export interface AuthorizationTables {
  oauth_authorizations: OAuthAuthorizationsTable;
  organization_oauth_policies: OrganizationOAuthPoliciesTable;
}
