import type { Db } from '../db/schema';

export interface McpPolicy {
  enabled: boolean;
  writes: boolean;
}

/** What an organization that never set its policy gets (docs/mcp-server.md#the-organizations-policy). */
export const DEFAULT_MCP_POLICY: McpPolicy = Object.freeze({ enabled: true, writes: false });

export async function findPolicy(db: Db, organizationId: string): Promise<McpPolicy> {
  const row = await db.selectFrom('organization_mcp_policies').select(['enabled', 'writes']).where('organization_id', '=', organizationId).executeTakeFirst();
  return row ? { enabled: row.enabled, writes: row.writes } : DEFAULT_MCP_POLICY;
}

export async function putPolicy(db: Db, organizationId: string, policy: McpPolicy, now: Date): Promise<void> {
  await db
    .insertInto('organization_mcp_policies')
    .values({ organization_id: organizationId, enabled: policy.enabled, writes: policy.writes, updated_at: now })
    .onConflict((oc) => oc.column('organization_id').doUpdateSet({ enabled: policy.enabled, writes: policy.writes, updated_at: now }))
    .execute();
}
