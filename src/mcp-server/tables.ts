import type { Timestamp } from '../db/columns';

/** An organization's MCP policy (docs/mcp-server.md#the-organizations-policy); no row: the defaults. */
export interface OrganizationMcpPoliciesTable {
  organization_id: string;
  enabled: boolean;
  writes: boolean;
  updated_at: Timestamp;
}

export interface McpServerTables {
  organization_mcp_policies: OrganizationMcpPoliciesTable;
}
