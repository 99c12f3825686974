import { sql, type RawBuilder } from 'kysely';
import type { AuditCtes } from '../audit';
import { preparedAs } from '../db/connect';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import { grantReaches, visibleTo } from '../access/resource-roles';
import { MARKETPLACE, PLUGIN } from '../grants/resources';

export type PluginStatus = 'active' | 'archived';
export type ComponentType = 'resource' | 'contribution' | 'setup' | 'lifecycle';

export interface PluginRow {
  id: string;
  organization_id: string;
  name: string;
  description: string;
  status: PluginStatus;
  source_format: string;
  source_origin: string;
  source_trusted: boolean;
  source_reference: string;
  created_by_member_id: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** What the manifest needs of a component: its type and normalized payload, not its raw source. */
export interface ComponentSummary {
  plugin_id: string;
  type: ComponentType;
  payload: Record<string, unknown> | null;
}

export interface ComponentRow {
  id: string;
  type: ComponentType;
  input: Record<string, unknown>;
  created_at: Date;
}

export interface NewPlugin {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  source: { format: string; origin: string; trusted: boolean; reference: string };
  createdByMemberId: string | null;
  now: Date;
}

export interface NewComponent {
  id: string;
  position: number;
  type: ComponentType;
  input: Record<string, unknown>;
}

// Unqualified, so the same list serves SELECT (aliased `p`), INSERT and UPDATE ... RETURNING.
const PLUGIN_COLUMNS = [
  'id',
  'organization_id',
  'name',
  'description',
  sql<PluginStatus>`status`.as('status'),
  'source_format',
  'source_origin',
  'source_trusted',
  'source_reference',
  'created_by_member_id',
  'created_at',
  'updated_at',
  'deleted_at',
] as const;

export async function insertPlugin(db: Db, p: NewPlugin): Promise<PluginRow> {
  return db
    .insertInto('plugins')
    .values({
      id: p.id,
      organization_id: p.organizationId,
      name: p.name,
      description: p.description,
      status: 'active',
      source_format: p.source.format,
      source_origin: p.source.origin,
      source_trusted: p.source.trusted,
      source_reference: p.source.reference,
      created_by_member_id: p.createdByMemberId,
      created_at: p.now,
      updated_at: p.now,
      deleted_at: null,
    })
    .returning(PLUGIN_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** All components of a plugin in one multi-row INSERT (inputs kept verbatim as jsonb). */
export async function insertComponents(db: Db, organizationId: string, pluginId: string, components: NewComponent[], now: Date): Promise<void> {
  if (components.length === 0) return;
  await db
    .insertInto('plugin_components')
    .values(
      components.map((c) => ({
        id: c.id,
        organization_id: organizationId,
        plugin_id: pluginId,
        position: c.position,
        type: c.type,
        input: JSON.stringify(c.input),
        created_at: now,
        removed_at: null,
      })),
    )
    .execute();
}

/**
 * A new plugin, all its components and the given grants (e.g. `grantsInsert` of the creator's
 * grants) in ONE statement: one round trip, atomic without a transaction of its own. The components
 * travel as one jsonb array parameter expanded in SQL (not 8 parameters per component), so the
 * statement text depends only on the grants' shape and is prepared once per connection. `audit`:
 * the change's audit entry and event as CTEs (`writeWithAudit` of
 * src/audit), written by the same statement.
 */
export async function insertPluginWithComponents(
  db: Db,
  p: NewPlugin,
  components: NewComponent[],
  grants: { insert: RawBuilder<unknown>; count: number },
  audit?: AuditCtes,
): Promise<PluginRow> {
  const json = JSON.stringify(components.map((c) => ({ id: c.id, type: c.type, input: c.input })));
  const name = `create_plugin${audit?.suffix ?? ''}_${grants.count}`;
  const result = await sql<PluginRow>`${preparedAs(name)}
    WITH plugin AS (
      INSERT INTO plugins (id, organization_id, name, description, status, source_format, source_origin, source_trusted, source_reference,
        created_by_member_id, created_at, updated_at, deleted_at)
      VALUES (${p.id}, ${p.organizationId}, ${p.name}, ${p.description}, 'active', ${p.source.format}, ${p.source.origin}, ${p.source.trusted},
        ${p.source.reference}, ${p.createdByMemberId}, ${p.now}, ${p.now}, NULL)
      RETURNING id, organization_id, name, description, status, source_format, source_origin, source_trusted, source_reference,
        created_by_member_id, created_at, updated_at, deleted_at
    ), components AS (
      INSERT INTO plugin_components (id, organization_id, plugin_id, position, type, input, created_at, removed_at)
      SELECT c.value ->> 'id', ${p.organizationId}::text, ${p.id}::text, (c.ordinality - 1)::int, c.value ->> 'type', c.value -> 'input',
        ${p.now}::timestamptz, NULL
      FROM jsonb_array_elements(${json}::jsonb) WITH ORDINALITY AS c
      RETURNING 1
    ), grants AS (${grants.insert})${audit ? sql`, ${audit.ctes}` : sql``}
    SELECT * FROM plugin`.execute(db);
  return result.rows[0]!;
}

export async function findPlugin(db: Db, organizationId: string, id: string): Promise<PluginRow | undefined> {
  return db.selectFrom('plugins as p').select(PLUGIN_COLUMNS).where('p.organization_id', '=', organizationId).where('p.id', '=', id).where('p.deleted_at', 'is', null).executeTakeFirst();
}

export interface PluginFilter {
  status?: PluginStatus;
  q?: string;
  visibleToMemberId: string | null;
  marketplaceId?: string;
}

/**
 * A plugin is visible to a member through a plugin grant or through a role on an active
 * marketplace that holds it.
 */
function visibleThroughMarketplace(memberId: string) {
  return sql<boolean>`EXISTS (SELECT 1 FROM marketplace_plugins mp
    WHERE mp.plugin_id = p.id AND ${grantReaches(MARKETPLACE.ref, sql.ref('mp.marketplace_id'), memberId)})`;
}

export async function listPlugins(db: Db, organizationId: string, filter: PluginFilter, after: Position | null, take: number): Promise<PluginRow[]> {
  let query = db.selectFrom('plugins as p').select(PLUGIN_COLUMNS).where('p.organization_id', '=', organizationId).where('p.deleted_at', 'is', null);
  if (filter.status) query = query.where('p.status', '=', filter.status);
  if (filter.q) query = query.where(sql<boolean>`strpos(lower(p.name), lower(${filter.q})) > 0`);
  if (filter.marketplaceId) {
    query = query.where(sql<boolean>`EXISTS (SELECT 1 FROM marketplace_plugins mp WHERE mp.plugin_id = p.id AND mp.marketplace_id = ${filter.marketplaceId})`);
  }
  if (filter.visibleToMemberId) {
    const memberId = filter.visibleToMemberId;
    query = query.where((eb) => eb.or([visibleTo(PLUGIN.ref, 'p', memberId), visibleThroughMarketplace(memberId)]));
  }
  if (after) query = query.where(before('p.created_at', 'p.id', after));
  return query.orderBy('p.created_at', 'desc').orderBy('p.id', 'desc').limit(take).execute();
}

/** True when the member reaches the plugin through an active marketplace they have a role on. */
export async function reachesThroughMarketplace(db: Db, organizationId: string, pluginId: string, memberId: string): Promise<boolean> {
  const result = await sql<{ one: number }>`SELECT 1 AS one FROM marketplace_plugins mp
    WHERE mp.organization_id = ${organizationId} AND mp.plugin_id = ${pluginId}
      AND EXISTS (SELECT 1 FROM members m WHERE m.id = ${memberId} AND m.removed_at IS NULL)
      AND ${grantReaches(MARKETPLACE.ref, sql.ref('mp.marketplace_id'), memberId)} LIMIT 1`.execute(db);
  return result.rows.length > 0;
}

export async function componentSummaries(db: Db, organizationId: string, pluginIds: string[]): Promise<ComponentSummary[]> {
  if (pluginIds.length === 0) return [];
  return db
    .selectFrom('plugin_components as c')
    .select(['c.plugin_id', sql<ComponentType>`c.type`.as('type'), sql<Record<string, unknown> | null>`c.input -> 'normalizedPayloadJson'`.as('payload')])
    .where('c.organization_id', '=', organizationId)
    .where('c.plugin_id', 'in', pluginIds)
    .where('c.removed_at', 'is', null)
    .orderBy('c.plugin_id')
    .orderBy('c.position')
    .execute();
}

/** Active marketplaces holding each plugin. */
export async function marketplacesOf(db: Db, organizationId: string, pluginIds: string[]): Promise<{ plugin_id: string; id: string; name: string }[]> {
  if (pluginIds.length === 0) return [];
  return db
    .selectFrom('marketplace_plugins as mp')
    .innerJoin('marketplaces as m', 'm.id', 'mp.marketplace_id')
    .select(['mp.plugin_id', 'm.id', 'm.name'])
    .where('mp.organization_id', '=', organizationId)
    .where('mp.plugin_id', 'in', pluginIds)
    .where('m.status', '=', 'active')
    .orderBy('m.created_at')
    .orderBy('m.id')
    .execute();
}

export async function listComponents(db: Db, organizationId: string, pluginId: string, after: Position | null, take: number): Promise<ComponentRow[]> {
  let query = db
    .selectFrom('plugin_components as c')
    .select(['c.id', sql<ComponentType>`c.type`.as('type'), sql<Record<string, unknown>>`c.input`.as('input'), 'c.created_at'])
    .where('c.organization_id', '=', organizationId)
    .where('c.plugin_id', '=', pluginId)
    .where('c.removed_at', 'is', null);
  if (after) query = query.where(before('c.created_at', 'c.id', after));
  return query.orderBy('c.created_at', 'desc').orderBy('c.id', 'desc').limit(take).execute();
}

export async function updatePlugin(
  db: Db,
  organizationId: string,
  id: string,
  patch: { name?: string; description?: string; status?: PluginStatus },
  now: Date,
): Promise<PluginRow | undefined> {
  return db
    .updateTable('plugins')
    .set({ ...patch, updated_at: now })
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .returning(PLUGIN_COLUMNS)
    .executeTakeFirst();
}
