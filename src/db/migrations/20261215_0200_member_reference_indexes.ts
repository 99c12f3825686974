import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Deleting a member checks every table that references `members` (its foreign keys' cascades,
 * SET NULLs and checks), one query per deleted row. Without an index on the referencing column
 * that query scans the whole table, every organization's rows: a purge's batch of 1,000 members
 * (docs/organization-deletion.md#purge) held its transaction for seconds, and longer the more
 * rows other organizations have (telemetry events above all). Each such column gets an index the
 * check can use (partial on `IS NOT NULL`, which the check's `= $1` implies), where none was
 * usable: absent, or partial on another condition (`revoked_at IS NULL`, `removed_at IS NULL`).
 * test/api/org-tables-registry.test.ts fails when a new reference to `members` has none.
 */
const COLUMNS: [table: string, column: string][] = [
  ['api_keys', 'member_id'],
  ['invitations', 'invited_by_member_id'],
  ['marketplaces', 'created_by_member_id'],
  ['plugins', 'created_by_member_id'],
  ['marketplace_plugins', 'added_by_member_id'],
  ['connector_instances', 'created_by_member_id'],
  ['marketplace_grants', 'member_id'],
  ['marketplace_grants', 'created_by_member_id'],
  ['plugin_grants', 'member_id'],
  ['plugin_grants', 'created_by_member_id'],
  ['connector_instance_grants', 'member_id'],
  ['connector_instance_grants', 'created_by_member_id'],
  ['mcp_connections', 'created_by_member_id'],
  ['mcp_connection_grants', 'member_id'],
  ['mcp_connection_grants', 'created_by_member_id'],
  ['suite_oauth_clients', 'updated_by_member_id'],
  ['workers', 'created_by_member_id'],
  ['telemetry_events', 'member_id'],
  ['templates', 'created_by_member_id'],
  ['llm_providers', 'created_by_member_id'],
  ['llm_provider_grants', 'member_id'],
  ['llm_provider_grants', 'created_by_member_id'],
  ['scim_tokens', 'created_by_member_id'],
  ['sso_connections', 'created_by_member_id'],
  ['service_accounts', 'created_by_member_id'],
  ['oauth_clients', 'created_by_member_id'],
  ['oauth_authorizations', 'member_id'],
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(db, COLUMNS.map(([table, column]) => `CREATE INDEX ${table}_${column}_ref_idx ON ${table} (${column}) WHERE ${column} IS NOT NULL;`).join('\n'));
}
