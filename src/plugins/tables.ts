import type { Json, Timestamp } from '../db/columns';

/** Row types of the plugin system (migration 20261122_0300_plugins). */
export interface MarketplacesTable {
  id: string;
  organization_id: string;
  name: string;
  description: string;
  logo_url: string | null;
  is_custom: boolean;
  status: string;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PluginsTable {
  id: string;
  organization_id: string;
  name: string;
  description: string;
  status: string;
  source_format: string;
  source_origin: string;
  source_trusted: boolean;
  source_reference: string;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

export interface PluginComponentsTable {
  id: string;
  organization_id: string;
  plugin_id: string;
  position: number;
  type: string;
  input: Json<Record<string, unknown>>;
  created_at: Timestamp;
  removed_at: Timestamp | null;
}

export interface MarketplacePluginsTable {
  marketplace_id: string;
  plugin_id: string;
  organization_id: string;
  added_by_member_id: string | null;
  created_at: Timestamp;
}

export interface ConnectorInstancesTable {
  id: string;
  organization_id: string;
  name: string;
  connector_type: string;
  remote_id: string | null;
  config: Json<Record<string, unknown>>;
  status: string;
  created_by_member_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The columns every grants table shares; the resource column differs by table. */
export interface GrantColumns {
  id: string;
  organization_id: string;
  member_id: string | null;
  team_id: string | null;
  org_wide: boolean;
  role: string;
  created_by_member_id: string | null;
  created_at: Timestamp;
  removed_at: Timestamp | null;
}

export interface PluginSystemTables {
  marketplaces: MarketplacesTable;
  plugins: PluginsTable;
  plugin_components: PluginComponentsTable;
  marketplace_plugins: MarketplacePluginsTable;
  connector_instances: ConnectorInstancesTable;
  marketplace_grants: GrantColumns & { marketplace_id: string };
  plugin_grants: GrantColumns & { plugin_id: string };
  connector_instance_grants: GrantColumns & { connector_instance_id: string };
}
