import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Plugin system: marketplaces, plugins and their components, marketplace memberships, connector
 * instances, and one access-grant table per resource with identical columns (src/grants is written
 * once over them). A deleted marketplace is removed (hard delete, with its memberships and grants);
 * revoked grants stay with `removed_at` set.
 */
const grantsTable = (table: string, resourceColumn: string, resourceTable: string) => `
    CREATE TABLE ${table} (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      ${resourceColumn} text NOT NULL REFERENCES ${resourceTable} (id) ON DELETE CASCADE,
      member_id text REFERENCES members (id) ON DELETE CASCADE,
      team_id text REFERENCES teams (id) ON DELETE CASCADE,
      org_wide boolean NOT NULL DEFAULT false,
      role text NOT NULL CHECK (role IN ('viewer', 'editor', 'manager')),
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      removed_at timestamptz(3),
      CONSTRAINT ${table}_one_target CHECK (num_nonnulls(member_id, team_id) + (org_wide::int) = 1)
    );
    CREATE INDEX ${table}_page_idx ON ${table} (${resourceColumn}, created_at DESC, id DESC);
    CREATE UNIQUE INDEX ${table}_member_key ON ${table} (${resourceColumn}, member_id) WHERE removed_at IS NULL AND member_id IS NOT NULL;
    CREATE UNIQUE INDEX ${table}_team_key ON ${table} (${resourceColumn}, team_id) WHERE removed_at IS NULL AND team_id IS NOT NULL;
    CREATE UNIQUE INDEX ${table}_org_wide_key ON ${table} (${resourceColumn}) WHERE removed_at IS NULL AND org_wide;
    CREATE INDEX ${table}_member_idx ON ${table} (member_id) WHERE removed_at IS NULL AND member_id IS NOT NULL;
    CREATE INDEX ${table}_team_idx ON ${table} (team_id) WHERE removed_at IS NULL AND team_id IS NOT NULL;
    CREATE INDEX ${table}_org_wide_idx ON ${table} (organization_id) WHERE removed_at IS NULL AND org_wide;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE marketplaces (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      logo_url text,
      is_custom boolean NOT NULL,
      status text NOT NULL CHECK (status IN ('active', 'archived')),
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX marketplaces_org_page_idx ON marketplaces (organization_id, created_at DESC, id DESC);

    CREATE TABLE plugins (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      status text NOT NULL CHECK (status IN ('active', 'archived')),
      source_format text NOT NULL,
      source_origin text NOT NULL,
      source_trusted boolean NOT NULL,
      source_reference text NOT NULL,
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      deleted_at timestamptz(3)
    );
    CREATE INDEX plugins_org_page_idx ON plugins (organization_id, created_at DESC, id DESC);

    CREATE TABLE plugin_components (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      plugin_id text NOT NULL REFERENCES plugins (id) ON DELETE CASCADE,
      position integer NOT NULL,
      type text NOT NULL CHECK (type IN ('resource', 'contribution', 'setup', 'lifecycle')),
      input jsonb NOT NULL,
      created_at timestamptz(3) NOT NULL,
      removed_at timestamptz(3)
    );
    CREATE UNIQUE INDEX plugin_components_position_key ON plugin_components (plugin_id, position);
    CREATE INDEX plugin_components_page_idx ON plugin_components (plugin_id, created_at DESC, id DESC);

    CREATE TABLE marketplace_plugins (
      marketplace_id text NOT NULL REFERENCES marketplaces (id) ON DELETE CASCADE,
      plugin_id text NOT NULL REFERENCES plugins (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      added_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      PRIMARY KEY (marketplace_id, plugin_id)
    );
    CREATE INDEX marketplace_plugins_plugin_idx ON marketplace_plugins (plugin_id);

    CREATE TABLE connector_instances (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      connector_type text NOT NULL,
      remote_id text,
      config jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('active', 'disabled')),
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX connector_instances_org_page_idx ON connector_instances (organization_id, created_at DESC, id DESC);
    ${grantsTable('marketplace_grants', 'marketplace_id', 'marketplaces')}
    ${grantsTable('plugin_grants', 'plugin_id', 'plugins')}
    ${grantsTable('connector_instance_grants', 'connector_instance_id', 'connector_instances')}
  `,
  );
}
