import type { ColumnType, Generated, Kysely, Transaction } from 'kysely';
import type { Timestamp } from './columns';
import type { ConnectedAccountTables } from '../connected-accounts/tables';
import type { PeopleTables } from '../invitations/tables';
import type { WorkerTables } from '../workers/tables';
import type { TelemetryTables } from '../telemetry/tables';
import type { PluginSystemTables } from '../plugins/tables';
import type { ProtectionTables } from '../protection/tables';
import type { AuditTables } from '../audit/tables';
import type { AuditStreamTables } from '../audit-streams/tables';
import type { PlanTables } from '../plans/tables';
import type { WebhookTables } from '../webhooks/tables';
import type { MailTables } from '../mail/tables';
import type { ResourceTables } from '../templates/tables';
import type { ScimTables } from '../scim/tables';
import type { RoleTables } from '../roles/tables';
import type { SsoTables } from '../sso/tables';
import type { MfaTables } from '../mfa/tables';
import type { UserTables } from '../users/tables';
import type { ServiceAccountTables } from '../service-accounts/tables';
import type { OAuthTables } from '../oauth/tables';
import type { McpServerTables } from '../mcp-server/tables';
import type { AuthorizationTables } from '../authorizations/tables';
import type { ExportTables } from '../exports/tables';
import type { McpBrokerTables } from '../mcp/tables';

/**
 * Row types of the database, as Kysely sees them. These describe tables, not API shapes: every
 * area maps rows to its API types explicitly (see each area's store.ts).
 * Areas add their tables as interfaces in their own folder and list them in `DB` below.
 */
export type { Json, Timestamp } from './columns';

export interface RolesTable {
  key: string;
  rank: number;
  description: string;
}

export interface UsersTable {
  id: string;
  email: string;
  email_normalized: string;
  name: string | null;
  image: string | null;
  /** Null for a user provisioned by SCIM: they sign in through SSO, never with a password. */
  password_hash: string | null;
  is_platform_admin: Generated<boolean>;
  /** The organization whose SCIM made the account (it follows its directory user's renames). */
  provisioned_by_organization_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the address was proven (null: not yet; src/users/verification.ts). */
  email_verified_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OrganizationsTable {
  id: string;
  name: string;
  plan: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** SSO enforcement (docs/sso.md#enforcement): password sign-in refused for verified domains. */
  sso_enforced: Generated<boolean>;
  /** Deletion (docs/organization-deletion.md): set while the organization is locked, until restored or purged. */
  deletion_scheduled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  purge_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  deletion_requested_by_user_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The last member mailed about the deletion (member ids sort by creation): where a crashed run resumes. */
  deletion_notices_after: ColumnType<string | null, string | null | undefined, string | null>;
  deletion_notices_done_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  purge_started_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  lifecycle_lease_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
  lifecycle_lease_token: ColumnType<string | null, string | null | undefined, string | null>;
}

/** What remains of a purged organization (docs/organization-deletion.md#purge): no name, no member. */
export interface OrganizationTombstonesTable {
  organization_id: string;
  name_sha256: string;
  deleted_at: Timestamp;
  deleted_by_user_id: string | null;
  purged_at: Timestamp;
}

export interface MembersTable {
  id: string;
  organization_id: string;
  /** Null for a service account, and for a person's ended membership once their account is deleted. */
  user_id: ColumnType<string | null, string | null, never>;
  /** A person, or a service account (src/service-accounts; never the owner). */
  type: ColumnType<MemberType, MemberType | undefined, never>;
  role: string;
  created_at: Timestamp;
  removed_at: Timestamp | null;
  /** Set while SCIM has the member `active: false`: their sessions and keys stop reaching the organization. */
  suspended_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  updated_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** What a member is: a person (`user`) or a service account the organization owns. */
export type MemberType = 'user' | 'service_account';

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  active_organization_id: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
  /** When the user last proved themself on this session (sign-in, reauthenticate). */
  authenticated_at: Timestamp;
  /** How the session was opened: 'sso' sessions carry the connection (null once it is deleted). */
  auth_method: Generated<'password' | 'sso' | 'reset' | 'invitation'>;
  sso_connection_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The second factor proved at sign-in, if any. */
  second_factor: ColumnType<'totp' | 'passkey' | 'recovery_code' | null, 'totp' | 'passkey' | 'recovery_code' | null | undefined, 'totp' | 'passkey' | 'recovery_code' | null>;
  ip: ColumnType<string | null, string | null | undefined, string | null>;
  user_agent: ColumnType<string | null, string | null | undefined, string | null>;
  last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface TeamsTable {
  id: string;
  organization_id: string;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** SCIM Group `externalId`. */
  external_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The team's rows in team_members, kept by triggers (migration 20261127_0905); never written. */
  member_count: ColumnType<number, never, never>;
}

export interface TeamMembersTable {
  team_id: string;
  member_id: string;
  organization_id: string;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  organization_id: string;
  member_id: string;
  name: string;
  prefix: string;
  key_hash: string;
  created_at: Timestamp;
  expires_at: Timestamp | null;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
  /** The key's permission scope; null: its creator's role, unscoped. */
  permissions: ColumnType<string[] | null, string[] | null | undefined, string[] | null>;
}

export interface FoundationTables {
  roles: RolesTable;
  users: UsersTable;
  organizations: OrganizationsTable;
  organization_tombstones: OrganizationTombstonesTable;
  members: MembersTable;
  sessions: SessionsTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  api_keys: ApiKeysTable;
}

// Each area's tables join here (one line per area).
export type DB = FoundationTables & PeopleTables & PluginSystemTables & WorkerTables & TelemetryTables & ProtectionTables & ConnectedAccountTables & AuditTables & AuditStreamTables & PlanTables & WebhookTables & ResourceTables & ScimTables & RoleTables & SsoTables & MailTables & MfaTables & UserTables & ServiceAccountTables & OAuthTables & McpServerTables & AuthorizationTables & ExportTables & McpBrokerTables;

/** What every store function takes: the database or the transaction its service opened. */
export type Db = Kysely<DB> | Transaction<DB>;
