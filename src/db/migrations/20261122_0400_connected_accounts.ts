import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Connected accounts (one core for external MCP connections and the office-suite capability):
 * MCP connections with their grants, the organization's suite OAuth client, pending OAuth sign-ins
 * (`oauth_states`, so any process can complete a callback) and members' accounts. Every secret
 * column (`*_sealed`) holds AES-256-GCM ciphertext from SecretBox, never plain text; a state is
 * stored only as its SHA-256. Scopes and features are space-separated, as OAuth writes scopes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE mcp_connections (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      url text NOT NULL,
      auth_type text NOT NULL CHECK (auth_type IN ('none', 'apikey', 'oauth')),
      credential_mode text NOT NULL CHECK (credential_mode IN ('shared', 'per_member')),
      api_key_sealed text,
      oauth_authorization_url text,
      oauth_token_url text,
      oauth_client_id text,
      oauth_client_secret_sealed text,
      oauth_scopes text NOT NULL DEFAULT '',
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX mcp_connections_org_page_idx ON mcp_connections (organization_id, created_at DESC, id DESC);

    -- Same column shape as the marketplace, plugin and connector grants (src/access/resource-roles.ts).
    CREATE TABLE mcp_connection_grants (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      connection_id text NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
      member_id text REFERENCES members (id) ON DELETE CASCADE,
      team_id text REFERENCES teams (id) ON DELETE CASCADE,
      org_wide boolean NOT NULL DEFAULT false,
      role text NOT NULL CHECK (role IN ('viewer', 'editor', 'manager')),
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      removed_at timestamptz(3),
      CHECK ((member_id IS NOT NULL)::int + (team_id IS NOT NULL)::int + (org_wide)::int = 1)
    );
    CREATE UNIQUE INDEX mcp_connection_grants_active_key ON mcp_connection_grants (connection_id, (coalesce(member_id, team_id, 'org'))) WHERE removed_at IS NULL;
    CREATE INDEX mcp_connection_grants_member_idx ON mcp_connection_grants (member_id) WHERE removed_at IS NULL;
    CREATE INDEX mcp_connection_grants_team_idx ON mcp_connection_grants (team_id) WHERE removed_at IS NULL;

    CREATE TABLE suite_oauth_clients (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      tenant_id text NOT NULL,
      client_id text NOT NULL,
      client_secret_sealed text NOT NULL,
      features text NOT NULL DEFAULT '',
      updated_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );

    CREATE TABLE oauth_states (
      state_hash text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      member_id text NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('mcp', 'suite-365')),
      connection_id text REFERENCES mcp_connections (id) ON DELETE CASCADE,
      code_verifier_sealed text NOT NULL,
      redirect_uri text NOT NULL,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3) NOT NULL,
      used_at timestamptz(3)
    );
    CREATE INDEX oauth_states_member_idx ON oauth_states (member_id, provider);
    CREATE INDEX oauth_states_expires_idx ON oauth_states (expires_at);

    CREATE TABLE connected_accounts (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      member_id text NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('mcp', 'suite-365')),
      connection_id text REFERENCES mcp_connections (id) ON DELETE CASCADE,
      auth_kind text NOT NULL CHECK (auth_kind IN ('apikey', 'oauth')),
      secrets_sealed text NOT NULL,
      access_expires_at timestamptz(3),
      scopes text NOT NULL DEFAULT '',
      external_user_id text,
      external_display_name text,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      CHECK ((provider = 'mcp') = (connection_id IS NOT NULL))
    );
    CREATE UNIQUE INDEX connected_accounts_member_key ON connected_accounts (member_id, provider, (coalesce(connection_id, '')));
    CREATE INDEX connected_accounts_connection_idx ON connected_accounts (connection_id);
    CREATE INDEX connected_accounts_org_idx ON connected_accounts (organization_id, provider);
  `,
  );
}
