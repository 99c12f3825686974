/**
 * What an organization's export holds, table by table (docs/organization-exports.md#what-the-zip-holds):
 * every table of the purge registry (src/org/registry.ts) is named here once, either as a file of
 * the zip — its exported columns listed one by one, the secrets it holds `withheld` (named in the
 * manifest), the service's own bookkeeping `internal` — or as not exported, with the reason.
 * test/api/org-exports-registry.test.ts reads the schema on both databases and fails when a
 * registry table is missing here, when a column of an exported table is in none of the three
 * lists (a new column must be classified before it can leave in an export), or when a column whose
 * name says it holds a secret (hash, token, secret, sealed, ...) is not withheld.
 */
export interface TableFile {
  table: string;
  /** The file is `<file>.ndjson`. */
  file: string;
  /** The column naming the organization (`organization_id`, or `id` for the organization itself). */
  scope?: string;
  /** The primary key: the order rows are read in, batch by batch. */
  key: string[];
  /** Exported, in this order, each as its camelCase name. */
  columns: string[];
  /** Secrets: never exported, named in the manifest's `withheld`. */
  withheld?: string[];
  /** The service's bookkeeping (leases, cursors, counters): not exported, not a secret. */
  internal?: string[];
  /** A value read from another table through a column of this one (a member's e-mail). */
  lookups?: Array<{ as: string; table: string; column: string; via: string }>;
}

/** The audit log and its checkpoints, written by src/audit/archive.ts with the chain's hashes. */
export interface AuditFile {
  table: string;
  file: string;
  audit: 'log' | 'checkpoints';
}

export interface NotExported {
  table: string;
  skip: string;
}

export type ExportEntry = TableFile | AuditFile | NotExported;

const GRANT = ['id', 'organization_id', 'member_id', 'team_id', 'org_wide', 'role', 'created_by_member_id', 'created_at', 'removed_at'];
const grant = (table: string, file: string, resource: string): TableFile => ({ table, file, key: ['id'], columns: [...GRANT.slice(0, 2), resource, ...GRANT.slice(2)] });
const TRANSIENT = 'a short-lived step of a sign-in or a replay guard, gone within minutes';
const DERIVED = 'summaries the service computes from telemetry events (in telemetry-events)';

export const EXPORT_FILES: readonly ExportEntry[] = [
  { table: 'organizations', file: 'organization', scope: 'id', key: ['id'], columns: ['id', 'name', 'plan', 'sso_enforced', 'created_at', 'updated_at', 'deletion_scheduled_at', 'purge_at', 'deletion_requested_by_user_id'], internal: ['deletion_notices_after', 'deletion_notices_done_at', 'purge_started_at', 'lifecycle_lease_until'], withheld: ['lifecycle_lease_token'] },
  { table: 'members', file: 'members', key: ['id'], columns: ['id', 'organization_id', 'user_id', 'type', 'role', 'created_at', 'updated_at', 'suspended_at', 'removed_at'], lookups: [{ as: 'email', table: 'users', column: 'email', via: 'user_id' }, { as: 'name', table: 'users', column: 'name', via: 'user_id' }] },
  { table: 'invitations', file: 'invitations', key: ['id'], columns: ['id', 'organization_id', 'email', 'role', 'status', 'invited_by_member_id', 'created_at', 'expires_at', 'accepted_at', 'cancelled_at'], withheld: ['token_hash'], internal: ['email_normalized', 'mail_message_id'] },
  { table: 'teams', file: 'teams', key: ['id'], columns: ['id', 'organization_id', 'name', 'external_id', 'created_at', 'updated_at'], internal: ['member_count'] },
  { table: 'team_members', file: 'team-members', key: ['team_id', 'member_id'], columns: ['team_id', 'member_id', 'organization_id', 'created_at'] },
  { table: 'organization_roles', file: 'roles', key: ['id'], columns: ['id', 'organization_id', 'key', 'name', 'description', 'permissions', 'built_in', 'created_at', 'updated_at'] },
  { table: 'api_keys', file: 'api-keys', key: ['id'], columns: ['id', 'organization_id', 'member_id', 'name', 'prefix', 'permissions', 'created_at', 'expires_at', 'last_used_at', 'revoked_at'], withheld: ['key_hash'] },
  { table: 'service_accounts', file: 'service-accounts', key: ['id'], columns: ['id', 'organization_id', 'member_id', 'name', 'description', 'disabled_at', 'created_by_member_id', 'created_at', 'updated_at', 'last_used_at'] },
  { table: 'service_account_secrets', file: 'service-account-secrets', key: ['id'], columns: ['id', 'organization_id', 'service_account_id', 'created_at', 'expires_at', 'last_used_at'], withheld: ['secret_hash'] },
  { table: 'marketplaces', file: 'marketplaces', key: ['id'], columns: ['id', 'organization_id', 'name', 'description', 'logo_url', 'is_custom', 'status', 'created_by_member_id', 'created_at', 'updated_at'] },
  { table: 'marketplace_plugins', file: 'marketplace-plugins', key: ['marketplace_id', 'plugin_id'], columns: ['marketplace_id', 'plugin_id', 'organization_id', 'added_by_member_id', 'created_at'] },
  grant('marketplace_grants', 'marketplace-grants', 'marketplace_id'),
  { table: 'plugins', file: 'plugins', key: ['id'], columns: ['id', 'organization_id', 'name', 'description', 'status', 'source_format', 'source_origin', 'source_trusted', 'source_reference', 'created_by_member_id', 'created_at', 'updated_at', 'deleted_at'] },
  { table: 'plugin_components', file: 'plugin-components', key: ['id'], columns: ['id', 'organization_id', 'plugin_id', 'position', 'type', 'input', 'created_at', 'removed_at'] },
  grant('plugin_grants', 'plugin-grants', 'plugin_id'),
  { table: 'connector_instances', file: 'connector-instances', key: ['id'], columns: ['id', 'organization_id', 'name', 'connector_type', 'remote_id', 'config', 'status', 'created_by_member_id', 'created_at', 'updated_at'] },
  grant('connector_instance_grants', 'connector-instance-grants', 'connector_instance_id'),
  { table: 'mcp_connections', file: 'mcp-connections', key: ['id'], columns: ['id', 'organization_id', 'name', 'url', 'auth_type', 'credential_mode', 'oauth_authorization_url', 'oauth_token_url', 'oauth_client_id', 'oauth_scopes', 'oauth_issuer', 'oauth_iss_parameter_supported', 'created_by_member_id', 'created_at', 'updated_at'], withheld: ['api_key_sealed', 'oauth_client_secret_sealed'] },
  grant('mcp_connection_grants', 'mcp-connection-grants', 'connection_id'),
  { table: 'connected_accounts', file: 'connected-accounts', key: ['id'], columns: ['id', 'organization_id', 'member_id', 'provider', 'connection_id', 'auth_kind', 'access_expires_at', 'scopes', 'external_user_id', 'external_display_name', 'created_at', 'updated_at'], withheld: ['secrets_sealed'] },
  { table: 'oauth_states', skip: TRANSIENT },
  { table: 'mcp_connection_uses', file: 'mcp-connection-uses', key: ['id'], columns: ['id', 'organization_id', 'connection_id', 'member_id', 'worker_id', 'worker_name', 'client_id', 'used_at'] },
  { table: 'templates', file: 'templates', key: ['id'], columns: ['id', 'organization_id', 'name', 'description', 'kind', 'content', 'version', 'created_by_member_id', 'created_at', 'updated_at'] },
  { table: 'llm_providers', file: 'llm-providers', key: ['id'], columns: ['id', 'organization_id', 'name', 'provider', 'base_url', 'api_version', 'models', 'default_model', 'enabled', 'key_hint', 'key_updated_at', 'created_by_member_id', 'created_at', 'updated_at'], withheld: ['api_key_sealed'] },
  grant('llm_provider_grants', 'llm-provider-grants', 'llm_provider_id'),
  { table: 'workers', file: 'workers', key: ['id'], columns: ['id', 'organization_id', 'name', 'description', 'runtime_url', 'version', 'ceiling', 'created_by_member_id', 'created_at', 'updated_at', 'last_activity_at', 'last_heartbeat_at', 'online_since', 'stopped_at'], withheld: ['host_token_hash', 'host_token_sealed'], internal: ['open_sessions'] },
  { table: 'worker_activity', file: 'worker-activity', key: ['id'], columns: ['id', 'organization_id', 'worker_id', 'type', 'occurred_at', 'detail', 'received_at'] },
  { table: 'worker_online_intervals', file: 'worker-online-intervals', key: ['worker_id', 'started_at'], columns: ['worker_id', 'organization_id', 'started_at', 'ended_at'] },
  { table: 'telemetry_events', file: 'telemetry-events', key: ['id'], columns: ['id', 'organization_id', 'member_id', 'type', 'occurred_at', 'received_at', 'session_id', 'duration_ms', 'success', 'dimensions'] },
  ...['telemetry_session_dimensions', 'telemetry_sessions', 'telemetry_hourly_sessions', 'telemetry_five_minute_sessions', 'telemetry_daily_members', 'telemetry_daily_totals', 'telemetry_weekly_keys', 'telemetry_weekly_counts', 'telemetry_dimension_sessions', 'telemetry_dimension_hourly', 'telemetry_dimension_daily_members', 'telemetry_dimension_daily_totals', 'telemetry_dimension_weekly_keys', 'telemetry_dimension_weekly_counts'].map((table) => ({ table, skip: DERIVED })),
  { table: 'webhook_endpoints', file: 'webhooks', key: ['id'], columns: ['id', 'organization_id', 'url', 'events', 'description', 'enabled', 'failing_since', 'created_at', 'updated_at'], withheld: ['secret_sealed', 'previous_secret_sealed'], internal: ['previous_secret_expires_at', 'organization_locked'] },
  { table: 'webhook_deliveries', skip: 'the delivery queue of events, each of which is an audit entry (in audit-log)' },
  { table: 'events', skip: 'the events outbox, kept 30 days: every event is an audit entry (in audit-log)' },
  { table: 'audit_streams', file: 'audit-streams', key: ['id'], columns: ['id', 'organization_id', 'type', 'config', 'enabled', 'cursor_id', 'last_delivered_at', 'last_error', 'paused_at', 'created_at', 'updated_at'], withheld: ['secrets_sealed', 'lease_token'], internal: ['cursor_seq', 'checkpoint_seq', 'failing_since', 'failures', 'next_attempt_at', 'lease_until', 'locked_through_seq'] },
  { table: 'audit_logs', file: 'audit-log', audit: 'log' },
  { table: 'audit_checkpoints', file: 'audit-checkpoints', audit: 'checkpoints' },
  { table: 'audit_chain_heads', file: 'audit-chain-head', key: ['organization_id'], columns: ['organization_id', 'seq', 'prev_hash', 'hash', 'last_at'], internal: ['checkpoint_seq', 'checkpoint_at'] },
  { table: 'sso_connections', file: 'sso-connections', key: ['id'], columns: ['id', 'organization_id', 'type', 'name', 'oidc_issuer', 'oidc_client_id', 'oidc_scopes', 'saml_idp_entity_id', 'saml_idp_sso_url', 'saml_idp_certificate', 'default_role', 'role_mappings', 'enabled', 'created_by_member_id', 'created_at', 'updated_at'], withheld: ['oidc_client_secret_sealed'] },
  { table: 'sso_domains', file: 'sso-domains', key: ['id'], columns: ['id', 'organization_id', 'domain', 'status', 'challenge_value', 'created_at', 'verified_at'] },
  { table: 'sso_identities', file: 'sso-identities', key: ['connection_id', 'subject'], columns: ['connection_id', 'subject', 'organization_id', 'user_id', 'email', 'created_at', 'last_sign_in_at'] },
  { table: 'sso_login_states', skip: TRANSIENT },
  { table: 'sso_exchange_codes', skip: TRANSIENT },
  { table: 'sso_saml_assertions', skip: TRANSIENT },
  { table: 'scim_tokens', file: 'scim-tokens', key: ['id'], columns: ['id', 'organization_id', 'name', 'prefix', 'created_by_member_id', 'created_at', 'last_used_at', 'revoked_at'], withheld: ['token_hash'] },
  { table: 'directory_users', file: 'directory-users', key: ['id'], columns: ['id', 'organization_id', 'user_name', 'external_id', 'active', 'attributes', 'email', 'member_id', 'link_reason', 'created_at', 'updated_at'], internal: ['user_name_normalized', 'email_normalized'] },
  { table: 'directory_group_members', file: 'directory-group-members', key: ['team_id', 'directory_user_id'], columns: ['team_id', 'directory_user_id', 'organization_id', 'created_at'] },
  { table: 'directory_user_counts', skip: 'a counter the service keeps of directory-users' },
  { table: 'oauth_clients', file: 'oauth-clients', key: ['id'], columns: ['id', 'organization_id', 'name', 'type', 'redirect_uris', 'scopes', 'logo_url', 'created_by_member_id', 'created_at', 'updated_at'], withheld: ['secret_hash'] },
  { table: 'oauth_authorizations', file: 'oauth-authorizations', key: ['id'], columns: ['id', 'organization_id', 'member_id', 'client_id', 'client_type', 'client_name', 'scopes', 'resource', 'created_at', 'last_used_at', 'expires_at', 'revoked_at'], withheld: ['grant_key', 'subject_token_hash'] },
  { table: 'organization_oauth_policies', file: 'oauth-policy', key: ['organization_id'], columns: ['organization_id', 'third_party_clients', 'allow_list', 'max_scopes', 'updated_at'] },
  { table: 'organization_mcp_policies', file: 'mcp-policy', key: ['organization_id'], columns: ['organization_id', 'enabled', 'writes', 'updated_at'] },
  { table: 'organization_auth_policies', file: 'auth-policy', key: ['organization_id'], columns: ['organization_id', 'require_mfa', 'updated_at'] },
  { table: 'suite_oauth_clients', file: 'suite-oauth-clients', key: ['organization_id'], columns: ['organization_id', 'tenant_id', 'client_id', 'features', 'updated_by_member_id', 'created_at', 'updated_at'], withheld: ['client_secret_sealed'] },
  { table: 'sessions', skip: "the users' own rows (each user's GET /v1/me/export)" },
  { table: 'users', skip: "the users' own rows (each user's GET /v1/me/export); members.ndjson names each member's e-mail and name" },
  { table: 'organization_tombstones', skip: 'what remains of a purged organization' },
  { table: 'organization_exports', skip: 'the exports themselves' },
  { table: 'organization_export_chunks', skip: 'the exports themselves' },
];

export const isTableFile = (e: ExportEntry): e is TableFile => 'columns' in e;
export const isAuditFile = (e: ExportEntry): e is AuditFile => 'audit' in e;

/** Column names that say a secret or a credential's verifier is inside. */
export const SECRET_COLUMN = /(hash|secret|sealed|token|password|verifier|nonce|grant_key|private)/;

/**
 * Named like one, but not secret: the audit chain's own hashes (the export carries them so the
 * chain can be checked offline), a token endpoint's URL, the time a rotated secret stops signing.
 */
export const NOT_SECRET = new Set(['audit_chain_heads.hash', 'audit_chain_heads.prev_hash', 'mcp_connections.oauth_token_url', 'webhook_endpoints.previous_secret_expires_at']);

export function camel(column: string): string {
  return column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
