import type { GrantTableRef } from '../access/resource-roles';
import type { IdKind } from '../lib/ids';

/**
 * The granted resources: the plugin system's three and MCP connections. Grants logic (src/grants)
 * is written once and takes one of these; each only names its table, id kind and words for
 * messages.
 */
export interface GrantedResource {
  /** Reason prefix and message word: `marketplace_manager_required`. */
  name: 'marketplace' | 'plugin' | 'connector_instance' | 'mcp_connection' | 'llm_provider';
  label: string;
  ref: GrantTableRef;
  grantIdKind: IdKind;
  /** Cursor scope: a cursor of one list is refused by another. */
  listName: string;
}

export const MARKETPLACE: GrantedResource = {
  name: 'marketplace',
  label: 'marketplace',
  ref: {
    table: 'marketplace_grants',
    resourceColumn: 'marketplace_id',
    // Access through an archived marketplace is suspended until it is restored.
    activeWhen: { table: 'marketplaces', condition: "r.status = 'active'" },
  },
  grantIdKind: 'marketplaceGrant',
  listName: 'marketplace_grants',
};

export const PLUGIN: GrantedResource = {
  name: 'plugin',
  label: 'plugin',
  ref: { table: 'plugin_grants', resourceColumn: 'plugin_id' },
  grantIdKind: 'pluginGrant',
  listName: 'plugin_grants',
};

export const CONNECTOR_INSTANCE: GrantedResource = {
  name: 'connector_instance',
  label: 'connector instance',
  ref: { table: 'connector_instance_grants', resourceColumn: 'connector_instance_id' },
  grantIdKind: 'connectorInstanceGrant',
  listName: 'connector_instance_grants',
};

/** MCP connections: a grant lets its targets use the connection (`access` on the connection). */
export const MCP_CONNECTION: GrantedResource = {
  name: 'mcp_connection',
  label: 'MCP connection',
  ref: { table: 'mcp_connection_grants', resourceColumn: 'connection_id' },
  grantIdKind: 'mcpConnectionGrant',
  listName: 'mcp_connection_grants',
};

export const LLM_PROVIDER: GrantedResource = {
  name: 'llm_provider',
  label: 'LLM provider',
  ref: { table: 'llm_provider_grants', resourceColumn: 'llm_provider_id' },
  grantIdKind: 'llmProviderGrant',
  listName: 'llm_provider_grants',
};
