import type { Generated } from 'kysely';
import type { Timestamp } from '../db/columns';

/** Tables of connected accounts, MCP connections and the suite client (migration 20261122_0400). */
export type Provider = 'mcp' | 'suite-365';

export interface McpConnectionsTable {
  id: string;
  organization_id: string;
  name: string;
  url: string;
  auth_type: 'none' | 'apikey' | 'oauth';
  credential_mode: 'shared' | 'per_member';
  api_key_sealed: string | null;
  oauth_authorization_url: string | null;
  oauth_token_url: string | null;
  oauth_client_id: string | null;
  oauth_client_secret_sealed: string | null;
  oauth_scopes: Generated<string>;
  /** RFC 9207 issuer, configured or from RFC 8414 metadata (migration 20261124_0400). */
  oauth_issuer: string | null;
  oauth_iss_parameter_supported: Generated<boolean>;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface McpConnectionGrantsTable {
  id: string;
  organization_id: string;
  connection_id: string;
  member_id: string | null;
  team_id: string | null;
  org_wide: Generated<boolean>;
  role: string;
  created_by_member_id: string | null;
  created_at: Timestamp;
  removed_at: Timestamp | null;
}

export interface SuiteOAuthClientsTable {
  organization_id: string;
  tenant_id: string;
  client_id: string;
  client_secret_sealed: string;
  features: Generated<string>;
  updated_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OAuthStatesTable {
  state_hash: string;
  organization_id: string;
  member_id: string;
  provider: Provider;
  connection_id: string | null;
  code_verifier_sealed: string;
  redirect_uri: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: Timestamp | null;
}

export interface ConnectedAccountsTable {
  id: string;
  organization_id: string;
  member_id: string;
  provider: Provider;
  connection_id: string | null;
  auth_kind: 'apikey' | 'oauth';
  secrets_sealed: string;
  access_expires_at: Timestamp | null;
  scopes: Generated<string>;
  external_user_id: string | null;
  external_display_name: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ConnectedAccountTables {
  mcp_connections: McpConnectionsTable;
  mcp_connection_grants: McpConnectionGrantsTable;
  suite_oauth_clients: SuiteOAuthClientsTable;
  oauth_states: OAuthStatesTable;
  connected_accounts: ConnectedAccountsTable;
}
