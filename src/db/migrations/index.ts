import type { Migration, MigrationProvider } from 'kysely';
import * as foundation from './20261122_0100_foundation';
import * as people from './20261122_0200_people';
import * as plugins from './20261122_0300_plugins';
import * as workersTelemetry from './20261122_0500_workers_telemetry';
import * as protection from './20261122_0600_protection';
import * as connectedAccounts from './20261122_0400_connected_accounts';
import * as telemetrySummaries from './20261122_0800_telemetry_summaries';
import * as roles from './20261123_0150_roles';
import * as resources from './20261123_0400_resources';
import * as plans from './20261123_0500_plans';
import * as workerLifecycle from './20261123_0500_worker_lifecycle';
import * as audit from './20261123_0600_audit';
import * as webhooks from './20261123_0700_webhooks';
import * as auditHeadTime from './20261123_0710_audit_head_time';
import * as scim from './20261123_0800_scim';
import * as sso from './20261124_0100_sso';
import * as telemetryDimensionSummaries from './20261124_0250_telemetry_dimension_summaries';
import * as mcpOAuthIssuer from './20261124_0400_mcp_oauth_issuer';
import * as telemetryDimensionHourly from './20261124_0900_telemetry_dimension_hourly';
import * as telemetryHourlyCovering from './20261124_0930_telemetry_hourly_covering';
import * as telemetryFiveMinute from './20261124_1000_telemetry_five_minute';
import * as sessionDetails from './20261127_0650_session_details';
import * as mail from './20261127_0655_mail';
import * as mfa from './20261127_0720_mfa';
import * as directoryUsers from './20261127_0705_directory_users';
import * as teamMemberCount from './20261127_0905_team_member_count';
import * as directoryUserCounts from './20261127_1030_directory_user_counts';
import * as outboxObservability from './20261127_1000_outbox_observability';
import * as ssoVerifier from './20261127_1010_sso_verifier';
import * as membersOutliveUsers from './20261127_1030_members_outlive_users';
import * as invitationMessages from './20261127_1040_invitation_messages';
import * as accountTokens from './20261127_1050_account_tokens';
import * as auditCheckpoints from './20261210_0500_audit_checkpoints';
import * as serviceAccounts from './20261211_0100_service_accounts';
import * as auditActorApiKey from './20261211_0200_audit_actor_api_key';
import * as oauth from './20261211_0300_oauth';
import * as mcpPolicy from './20261212_0100_mcp_policy';
import * as oauthAuthorizations from './20261212_0200_oauth_authorizations';
import * as auditStreams from './20261213_0100_audit_streams';
import * as auditActorClient from './20261213_0200_audit_actor_client';
import * as orgLifecycle from './20261213_0300_org_lifecycle';
import * as auditStreamsLock from './20261213_0400_audit_streams_lock';
import * as workerCeiling from './20261214_0100_worker_ceiling';
import * as orgExports from './20261214_0200_org_exports';
import * as oauthDevicePolls from './20261214_0500_oauth_device_polls';
import * as oauthRegisteredClients from './20261214_0900_oauth_registered_clients';
import * as delegations from './20261214_1000_delegations';
import * as mcpConnectionUses from './20261215_0100_mcp_connection_uses';
import * as memberReferenceIndexes from './20261215_0200_member_reference_indexes';
import * as organizationReferenceIndexes from './20261216_0100_organization_reference_indexes';

/**
 * Migrations are listed here rather than read from the folder, so the compiled service, tsx and
 * jest all see the same set. Names sort in the order they apply; add new ones at the end.
 * Forward-only: a released migration is never edited, a new one corrects it.
 */
const migrations: Record<string, Migration> = {
  '20261122_0100_foundation': foundation,
  '20261122_0200_people': people,
  '20261122_0300_plugins': plugins,
  '20261122_0400_connected_accounts': connectedAccounts,
  '20261122_0500_workers_telemetry': workersTelemetry,
  '20261122_0600_protection': protection,
  '20261122_0800_telemetry_summaries': telemetrySummaries,
  '20261123_0150_roles': roles,
  '20261123_0400_resources': resources,
  '20261123_0500_plans': plans,
  '20261123_0500_worker_lifecycle': workerLifecycle,
  '20261123_0600_audit': audit,
  '20261123_0700_webhooks': webhooks,
  '20261123_0710_audit_head_time': auditHeadTime,
  '20261123_0800_scim': scim,
  '20261124_0100_sso': sso,
  '20261124_0250_telemetry_dimension_summaries': telemetryDimensionSummaries,
  '20261124_0400_mcp_oauth_issuer': mcpOAuthIssuer,
  '20261124_0900_telemetry_dimension_hourly': telemetryDimensionHourly,
  '20261124_0930_telemetry_hourly_covering': telemetryHourlyCovering,
  '20261124_1000_telemetry_five_minute': telemetryFiveMinute,
  '20261127_0650_session_details': sessionDetails,
  '20261127_0655_mail': mail,
  '20261127_0705_directory_users': directoryUsers,
  '20261127_0720_mfa': mfa,
  '20261127_0905_team_member_count': teamMemberCount,
  '20261127_1000_outbox_observability': outboxObservability,
  '20261127_1010_sso_verifier': ssoVerifier,
  '20261127_1030_directory_user_counts': directoryUserCounts,
  '20261127_1030_members_outlive_users': membersOutliveUsers,
  '20261127_1040_invitation_messages': invitationMessages,
  '20261127_1050_account_tokens': accountTokens,
  '20261210_0500_audit_checkpoints': auditCheckpoints,
  '20261211_0100_service_accounts': serviceAccounts,
  '20261211_0200_audit_actor_api_key': auditActorApiKey,
  '20261211_0300_oauth': oauth,
  '20261212_0100_mcp_policy': mcpPolicy,
  '20261212_0200_oauth_authorizations': oauthAuthorizations,
  '20261213_0100_audit_streams': auditStreams,
  '20261213_0200_audit_actor_client': auditActorClient,
  '20261213_0300_org_lifecycle': orgLifecycle,
  '20261213_0400_audit_streams_lock': auditStreamsLock,
  '20261214_0100_worker_ceiling': workerCeiling,
  '20261214_0200_org_exports': orgExports,
  '20261214_0500_oauth_device_polls': oauthDevicePolls,
  '20261214_0900_oauth_registered_clients': oauthRegisteredClients,
  '20261214_1000_delegations': delegations,
  '20261215_0100_mcp_connection_uses': mcpConnectionUses,
  '20261215_0200_member_reference_indexes': memberReferenceIndexes,
  '20261216_0100_organization_reference_indexes': organizationReferenceIndexes,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
