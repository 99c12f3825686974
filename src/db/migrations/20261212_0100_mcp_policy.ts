import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Each organization's MCP policy (docs/mcp-server.md#the-organizations-policy), owned by
 * src/mcp-server: whether `/mcp` serves the organization and whether its tools may write. No row
 * means the defaults (enabled, read only).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE organization_mcp_policies (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      enabled boolean NOT NULL,
      writes boolean NOT NULL,
      updated_at timestamptz NOT NULL
    );
  `,
  );
}
