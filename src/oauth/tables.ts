import type { ColumnType } from 'kysely';
import type { Json, Timestamp } from '../db/columns';

type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

/** A key access tokens are signed with (docs/oauth.md#signing-keys); the private half sealed with SECRET_KEY. */
export interface OAuthSigningKeysTable {
  kid: string;
  alg: string;
  public_jwk: Json<Record<string, unknown>>;
  private_jwk_sealed: string;
  created_at: Timestamp;
  /** Set when a newer key took over signing; null for the one key that signs. */
  retired_at: NullableTimestamp;
  /** A retired key verifies until then (every token it signed has expired); it then leaves the JWKS. */
  verify_until: NullableTimestamp;
}

/**
 * oidc-provider's storage and the revoked access tokens (docs/oauth.md#storage): every key a hash,
 * every payload sealed.
 */
export interface OAuthRecordsTable {
  /** SHA-256 of `<model>:<id>`. */
  id: string;
  model: string;
  payload_sealed: string;
  grant_key: string | null;
  uid_key: string | null;
  user_code_key: string | null;
  expires_at: NullableTimestamp;
  consumed_at: NullableTimestamp;
  /** A device code's last poll at the token endpoint, and the interval it must keep (seconds). */
  polled_at: NullableTimestamp;
  poll_interval: number | null;
}

/** An organization's own OAuth client (`oac_`, docs/oauth.md#organization-clients). */
export interface OAuthClientsTable {
  id: string;
  organization_id: string;
  name: string;
  type: 'public' | 'confidential';
  redirect_uris: string[];
  scopes: string[];
  logo_url: string | null;
  /** SHA-256 of the client secret (confidential clients only). */
  secret_hash: string | null;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A client registered through dynamic registration (docs/oauth.md#dynamic-registration): public, of no organization. */
export interface OAuthRegisteredClientsTable {
  id: string;
  /** Its `client_name`, the client's own claim. */
  name: string | null;
  /** The registration as the authorization server validated it (no secret: registered clients are public). */
  metadata: Json<Record<string, unknown>>;
  created_at: Timestamp;
  /** Registration or the last token issued to it; 30 days later the client is no longer known. */
  last_used_at: Timestamp;
}

export interface OAuthTables {
  oauth_signing_keys: OAuthSigningKeysTable;
  oauth_records: OAuthRecordsTable;
  oauth_clients: OAuthClientsTable;
  oauth_registered_clients: OAuthRegisteredClientsTable;
}
