import type { Timestamp } from '../db/columns';

/** The credential broker's record of lent tokens (migration 20261215_0100_mcp_connection_uses). */
export interface McpConnectionUsesTable {
  id: string;
  organization_id: string;
  connection_id: string;
  /** The member the worker acted for. */
  member_id: string;
  worker_id: string;
  /** The worker's name when it took the token (kept after the worker is deleted). */
  worker_name: string;
  /** The OAuth client of the delegated token (the worker's id as a client). */
  client_id: string;
  used_at: Timestamp;
}

export interface McpBrokerTables {
  mcp_connection_uses: McpConnectionUsesTable;
}
