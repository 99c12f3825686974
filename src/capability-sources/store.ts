import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { visibleTo } from '../access/resource-roles';
import { MCP_CONNECTION } from '../grants/resources';

export interface Viewer {
  organizationId: string;
  memberId: string;
  admin: boolean;
}

/** The organization's suite client (if any) and whether this member has an account: one query. */
export async function suiteState(db: Db, viewer: Viewer): Promise<{ features: string; has_account: boolean } | undefined> {
  return db
    .selectFrom('suite_oauth_clients as c')
    .select([
      'c.features',
      sql<boolean>`EXISTS (SELECT 1 FROM connected_accounts a
        WHERE a.organization_id = c.organization_id AND a.member_id = ${viewer.memberId} AND a.provider = 'suite-365')`.as('has_account'),
    ])
    .where('c.organization_id', '=', viewer.organizationId)
    .executeTakeFirst();
}

export interface McpSourceRow {
  id: string;
  name: string;
  auth_type: 'none' | 'apikey' | 'oauth';
  credential_mode: 'shared' | 'per_member';
  connected_for_me: boolean;
}

/** Every MCP connection the member may use (admins: all), with `connectedForMe`: one query. */
export async function mcpSources(db: Db, viewer: Viewer): Promise<McpSourceRow[]> {
  let query = db
    .selectFrom('mcp_connections as c')
    .select([
      'c.id',
      'c.name',
      'c.auth_type',
      'c.credential_mode',
      sql<boolean>`CASE WHEN c.credential_mode = 'shared' THEN (c.auth_type = 'none' OR c.api_key_sealed IS NOT NULL)
        ELSE EXISTS (SELECT 1 FROM connected_accounts a WHERE a.connection_id = c.id AND a.member_id = ${viewer.memberId}) END`.as('connected_for_me'),
    ])
    .where('c.organization_id', '=', viewer.organizationId);
  if (!viewer.admin) query = query.where(visibleTo(MCP_CONNECTION.ref, 'c', viewer.memberId));
  return query.orderBy('c.created_at').orderBy('c.id').execute();
}
