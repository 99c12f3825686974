import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * The issuer of an MCP connection's authorization server (RFC 9207 checks the callback's `iss`
 * against it), configured or read from the server's metadata (RFC 8414), and whether that
 * metadata says every authorization response carries `iss` (then a callback without one is
 * refused). Existing connections have neither: their callbacks keep the origin-and-path rule.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE mcp_connections ADD COLUMN oauth_issuer text;
    ALTER TABLE mcp_connections ADD COLUMN oauth_iss_parameter_supported boolean NOT NULL DEFAULT false;
  `,
  );
}
