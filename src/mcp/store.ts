import { sql, type SqlBool, type Expression } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import { visibleTo } from '../access/resource-roles';
import { MCP_CONNECTION } from '../grants/resources';

export interface ConnectionRow {
  id: string;
  organization_id: string;
  name: string;
  url: string;
  auth_type: 'none' | 'apikey' | 'oauth';
  credential_mode: 'shared' | 'per_member';
  has_api_key: boolean;
  oauth_authorization_url: string | null;
  oauth_token_url: string | null;
  oauth_client_id: string | null;
  has_client_secret: boolean;
  oauth_scopes: string;
  oauth_issuer: string | null;
  oauth_iss_parameter_supported: boolean;
  created_by_member_id: string | null;
  created_at: Date;
  updated_at: Date;
  connected_for_me: boolean;
}

export interface Access {
  orgWide: boolean;
  memberIds: string[];
  teamIds: string[];
}

/** Everything about a connection except its sealed secrets, as seen by one member. */
function connectionQuery(db: Db, organizationId: string, memberId: string) {
  return db
    .selectFrom('mcp_connections as c')
    .select([
      'c.id',
      'c.organization_id',
      'c.name',
      'c.url',
      'c.auth_type',
      'c.credential_mode',
      sql<boolean>`c.api_key_sealed IS NOT NULL`.as('has_api_key'),
      'c.oauth_authorization_url',
      'c.oauth_token_url',
      'c.oauth_client_id',
      sql<boolean>`c.oauth_client_secret_sealed IS NOT NULL`.as('has_client_secret'),
      'c.oauth_scopes',
      'c.oauth_issuer',
      'c.oauth_iss_parameter_supported',
      'c.created_by_member_id',
      'c.created_at',
      'c.updated_at',
      sql<boolean>`CASE WHEN c.credential_mode = 'shared' THEN (c.auth_type = 'none' OR c.api_key_sealed IS NOT NULL)
        ELSE EXISTS (SELECT 1 FROM connected_accounts a WHERE a.connection_id = c.id AND a.member_id = ${memberId}) END`.as('connected_for_me'),
    ])
    .where('c.organization_id', '=', organizationId);
}

/** `visibleToMemberId` null: every connection (the service decides who sees all). */
function usableBy(visibleToMemberId: string | null): Expression<SqlBool> {
  return visibleToMemberId === null ? sql<SqlBool>`true` : visibleTo(MCP_CONNECTION.ref, 'c', visibleToMemberId);
}

/** A connection of the organization, whether or not the member may use it. */
export async function findConnection(db: Db, organizationId: string, memberId: string, connectionId: string): Promise<ConnectionRow | undefined> {
  return connectionQuery(db, organizationId, memberId).where('c.id', '=', connectionId).executeTakeFirst();
}

/** A connection the member may use (any, when `visibleToMemberId` is null), or undefined. */
export async function findUsableConnection(
  db: Db,
  viewer: { organizationId: string; memberId: string; visibleToMemberId: string | null },
  connectionId: string,
): Promise<ConnectionRow | undefined> {
  return connectionQuery(db, viewer.organizationId, viewer.memberId)
    .where('c.id', '=', connectionId)
    .where(usableBy(viewer.visibleToMemberId))
    .executeTakeFirst();
}

export async function listUsableConnections(
  db: Db,
  viewer: { organizationId: string; memberId: string; visibleToMemberId: string | null },
  after: Position | null,
  take: number,
): Promise<(ConnectionRow & Position)[]> {
  let query = connectionQuery(db, viewer.organizationId, viewer.memberId).where(usableBy(viewer.visibleToMemberId));
  if (after) query = query.where(before('c.created_at', 'c.id', after));
  const rows = await query.orderBy('c.created_at', 'desc').orderBy('c.id', 'desc').limit(take).execute();
  return rows.map((row) => ({ ...row, createdAt: row.created_at }));
}

export interface OAuthClientSecrets {
  oauth_authorization_url: string | null;
  oauth_token_url: string | null;
  oauth_client_id: string | null;
  oauth_client_secret_sealed: string | null;
  oauth_scopes: string;
  oauth_issuer: string | null;
  oauth_iss_parameter_supported: boolean;
}

export async function findOAuthClient(db: Db, organizationId: string, connectionId: string): Promise<OAuthClientSecrets | undefined> {
  return db
    .selectFrom('mcp_connections')
    .select(['oauth_authorization_url', 'oauth_token_url', 'oauth_client_id', 'oauth_client_secret_sealed', 'oauth_scopes', 'oauth_issuer', 'oauth_iss_parameter_supported'])
    .where('organization_id', '=', organizationId)
    .where('id', '=', connectionId)
    .executeTakeFirst();
}

export interface NewConnection {
  id: string;
  organizationId: string;
  name: string;
  url: string;
  authType: 'none' | 'apikey' | 'oauth';
  credentialMode: 'shared' | 'per_member';
  apiKeySealed: string | null;
  oauth: {
    authorizationUrl: string;
    tokenUrl: string;
    issuer: string | null;
    issParameterSupported: boolean;
    clientId: string;
    clientSecretSealed: string | null;
    scopes: string;
  } | null;
  createdByMemberId: string;
  now: Date;
}

export async function insertConnection(db: Db, c: NewConnection): Promise<void> {
  await db
    .insertInto('mcp_connections')
    .values({
      id: c.id,
      organization_id: c.organizationId,
      name: c.name,
      url: c.url,
      auth_type: c.authType,
      credential_mode: c.credentialMode,
      api_key_sealed: c.apiKeySealed,
      oauth_authorization_url: c.oauth?.authorizationUrl ?? null,
      oauth_token_url: c.oauth?.tokenUrl ?? null,
      oauth_client_id: c.oauth?.clientId ?? null,
      oauth_client_secret_sealed: c.oauth?.clientSecretSealed ?? null,
      oauth_scopes: c.oauth?.scopes ?? '',
      oauth_issuer: c.oauth?.issuer ?? null,
      oauth_iss_parameter_supported: c.oauth?.issParameterSupported ?? false,
      created_by_member_id: c.createdByMemberId,
      created_at: c.now,
      updated_at: c.now,
    })
    .execute();
}

export interface ConnectionPatch {
  name?: string;
  url?: string;
  api_key_sealed?: string;
  oauth_authorization_url?: string;
  oauth_token_url?: string;
  oauth_client_id?: string;
  oauth_client_secret_sealed?: string;
  oauth_scopes?: string;
  oauth_issuer?: string;
  oauth_iss_parameter_supported?: boolean;
}

export async function updateConnection(db: Db, organizationId: string, connectionId: string, patch: ConnectionPatch, now: Date): Promise<boolean> {
  const updated = await db
    .updateTable('mcp_connections')
    .set({ ...patch, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', connectionId)
    .returning('id')
    .execute();
  return updated.length > 0;
}

/** Deletes the connection; its grants, accounts and pending sign-ins go with it (ON DELETE CASCADE). */
export async function deleteConnection(db: Db, organizationId: string, connectionId: string): Promise<boolean> {
  const deleted = await db.deleteFrom('mcp_connections').where('organization_id', '=', organizationId).where('id', '=', connectionId).returning('id').execute();
  return deleted.length > 0;
}

/** The sealed API key of a shared apikey connection (the broker lends it), or null. */
export async function findSharedApiKey(db: Db, organizationId: string, connectionId: string): Promise<string | null> {
  const row = await db.selectFrom('mcp_connections').select('api_key_sealed').where('organization_id', '=', organizationId).where('id', '=', connectionId).executeTakeFirst();
  return row?.api_key_sealed ?? null;
}
