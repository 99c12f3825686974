import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * What the credential broker lent (docs/workers-and-usage.md#the-credential-broker): one row per
 * access token a worker acting for a member took of an MCP connection, so the member can list
 * which agents used which connection, newest first, at a cost that does not grow with the audit
 * log (the index serves the member's page of one connection). The worker's name is kept as it was
 * then: the list still names a worker deleted since. No token or secret is stored here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE mcp_connection_uses (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      connection_id text NOT NULL REFERENCES mcp_connections (id) ON DELETE CASCADE,
      member_id text NOT NULL,
      worker_id text NOT NULL,
      worker_name text NOT NULL,
      client_id text NOT NULL,
      used_at timestamptz NOT NULL
    );
    CREATE INDEX mcp_connection_uses_member_page_idx ON mcp_connection_uses (organization_id, member_id, connection_id, used_at DESC, id DESC);
    CREATE INDEX mcp_connection_uses_connection_idx ON mcp_connection_uses (connection_id);
  `,
  );
}
