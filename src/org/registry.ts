/**
 * Every table that holds an organization's rows, named once (docs/organization-deletion.md#the-table-registry):
 * how the purge removes them, in the order it does. test/api/org-tables-registry.test.ts reads the
 * schema (information_schema, on both databases) and fails when a table with an `organization_id`
 * column, or one reachable from such a table by a foreign key, is missing here, or when an entry
 * names a table that is gone.
 *
 * Order: children before their parents, so no delete cascades into a large set of rows inside
 * one statement (every foreign key to `organizations` is ON DELETE CASCADE: deleting the
 * organization row first would remove millions of rows in one transaction).
 */
export type PurgeStep =
  /** Rows carrying the organization's id. */
  | { table: string; kind: 'delete' }
  /** Rows with no `organization_id`, owned through `column` → `parent.id` of a table that has one. */
  | { table: string; kind: 'delete-via'; column: string; parent: string }
  /** Another owner's rows pointing at the organization: the pointer is cleared, the row stays (a user's session, a user's account). */
  | { table: string; kind: 'detach'; column: string }
  /** Kept on purpose (the tombstone). */
  | { table: string; kind: 'keep' };

const del = (table: string): PurgeStep => ({ table, kind: 'delete' });

export const PURGE_STEPS: readonly PurgeStep[] = [
  // Exports (the zip's chunks reference their export).
  del('organization_export_chunks'),
  del('organization_exports'),
  // Outbox and webhooks: deliveries reference events.
  del('webhook_deliveries'),
  del('events'),
  del('webhook_endpoints'),
  // The audit log (its largest table) and what signs it.
  del('audit_streams'),
  del('audit_checkpoints'),
  del('audit_logs'),
  del('audit_chain_heads'),
  // Telemetry: leaf tables, all keyed by organization.
  del('telemetry_events'),
  del('telemetry_session_dimensions'),
  del('telemetry_sessions'),
  del('telemetry_hourly_sessions'),
  del('telemetry_five_minute_sessions'),
  del('telemetry_daily_members'),
  del('telemetry_daily_totals'),
  del('telemetry_weekly_keys'),
  del('telemetry_weekly_counts'),
  del('telemetry_dimension_sessions'),
  del('telemetry_dimension_hourly'),
  del('telemetry_dimension_daily_members'),
  del('telemetry_dimension_daily_totals'),
  del('telemetry_dimension_weekly_keys'),
  del('telemetry_dimension_weekly_counts'),
  // Workers (their creator is a member: before members).
  del('worker_activity'),
  del('worker_online_intervals'),
  del('workers'),
  // MCP connections and their accounts.
  del('mcp_connection_uses'),
  del('connected_accounts'),
  del('oauth_states'),
  del('mcp_connection_grants'),
  del('mcp_connections'),
  // Resources and their grants.
  del('llm_provider_grants'),
  del('llm_providers'),
  del('templates'),
  del('connector_instance_grants'),
  del('connector_instances'),
  del('marketplace_grants'),
  del('plugin_grants'),
  del('marketplace_plugins'),
  del('plugin_components'),
  del('plugins'),
  del('marketplaces'),
  // Clients and policies.
  del('suite_oauth_clients'),
  del('oauth_authorizations'),
  del('organization_oauth_policies'),
  del('oauth_clients'),
  del('organization_mcp_policies'),
  del('organization_auth_policies'),
  // SSO: SAML assertions carry only their connection.
  { table: 'sso_saml_assertions', kind: 'delete-via', column: 'connection_id', parent: 'sso_connections' },
  del('sso_exchange_codes'),
  del('sso_login_states'),
  del('sso_identities'),
  del('sso_domains'),
  del('sso_connections'),
  // SCIM.
  del('directory_group_members'),
  del('directory_users'),
  del('directory_user_counts'),
  del('scim_tokens'),
  // Credentials, teams, people.
  del('service_account_secrets'),
  del('service_accounts'),
  del('api_keys'),
  del('team_members'),
  del('teams'),
  del('invitations'),
  del('members'),
  del('organization_roles'),
  // Users' own rows that point at it: a session loses its active organization, an account the organization whose SCIM made it.
  { table: 'sessions', kind: 'detach', column: 'active_organization_id' },
  { table: 'users', kind: 'detach', column: 'provisioned_by_organization_id' },
  // Last, in the transaction that writes the tombstone (src/org/purge.ts).
  del('organizations'),
  { table: 'organization_tombstones', kind: 'keep' },
];
