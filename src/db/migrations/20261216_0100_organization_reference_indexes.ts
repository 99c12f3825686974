import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Every column that references `organizations` gets an index led by it, as those referencing
 * `members` did (20261215_0200). A purge removes an organization's rows by `organization_id` in
 * short batches, then deletes the organization row, whose foreign keys check every referencing
 * table with `organization_id = $1`. Without an index both scan the whole table: every tenant's
 * rows, and the purge's own dead ones (bench scenario 20: the organization row's delete held its
 * transaction 1.1 s on these tables' dead rows). test/api/org-tables-registry.test.ts fails when
 * a new reference to `organizations` has none.
 */
const TABLES = [
  'connector_instance_grants',
  'directory_group_members',
  'llm_provider_grants',
  'marketplace_grants',
  'marketplace_plugins',
  'mcp_connection_grants',
  'oauth_authorizations',
  'oauth_states',
  'plugin_components',
  'plugin_grants',
  'scim_tokens',
  'service_account_secrets',
  'sso_exchange_codes',
  'sso_identities',
  'sso_login_states',
  'team_members',
  'webhook_deliveries',
  'worker_activity',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(db, TABLES.map((table) => `CREATE INDEX ${table}_organization_idx ON ${table} (organization_id);`).join('\n'));
}
