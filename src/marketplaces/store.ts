import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';
import { before, type Position } from '../lib/pagination';
import { visibleTo } from '../access/resource-roles';
import { MARKETPLACE } from '../grants/resources';

export interface MarketplaceRow {
  id: string;
  organization_id: string;
  name: string;
  description: string;
  logo_url: string | null;
  is_custom: boolean;
  status: 'active' | 'archived';
  created_by_member_id: string | null;
  created_at: Date;
  updated_at: Date;
  plugin_count: number;
}

const pluginCount = sql<number>`(SELECT count(*)::int FROM marketplace_plugins mp JOIN plugins p ON p.id = mp.plugin_id
  WHERE mp.marketplace_id = m.id AND p.deleted_at IS NULL)`;

function marketplaceQuery(db: Db, organizationId: string) {
  return db
    .selectFrom('marketplaces as m')
    .select([
      'm.id',
      'm.organization_id',
      'm.name',
      'm.description',
      'm.logo_url',
      'm.is_custom',
      sql<'active' | 'archived'>`m.status`.as('status'),
      'm.created_by_member_id',
      'm.created_at',
      'm.updated_at',
      pluginCount.as('plugin_count'),
    ])
    .where('m.organization_id', '=', organizationId);
}

export interface NewMarketplace {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  logoUrl: string | null;
  isCustom: boolean;
  createdByMemberId: string | null;
  now: Date;
}

export async function insertMarketplace(db: Db, m: NewMarketplace): Promise<void> {
  await db
    .insertInto('marketplaces')
    .values({
      id: m.id,
      organization_id: m.organizationId,
      name: m.name,
      description: m.description,
      logo_url: m.logoUrl,
      is_custom: m.isCustom,
      status: 'active',
      created_by_member_id: m.createdByMemberId,
      created_at: m.now,
      updated_at: m.now,
    })
    .execute();
}

export async function findMarketplace(db: Db, organizationId: string, id: string): Promise<MarketplaceRow | undefined> {
  return marketplaceQuery(db, organizationId).modifyFront(preparedAs('find_marketplace')).where('m.id', '=', id).executeTakeFirst();
}

/** Locks the row for a change that must see its current status (archive vs publish). */
export async function lockMarketplace(db: Db, organizationId: string, id: string): Promise<{ status: string } | undefined> {
  return db.selectFrom('marketplaces').select('status').where('id', '=', id).where('organization_id', '=', organizationId).forUpdate().executeTakeFirst();
}

export interface MarketplaceFilter {
  status?: 'active' | 'archived' | 'deleted';
  q?: string;
  /** Null for admins (everything); else only what a grant lets this member see. */
  visibleToMemberId: string | null;
}

export async function listMarketplaces(db: Db, organizationId: string, filter: MarketplaceFilter, after: Position | null, take: number): Promise<MarketplaceRow[]> {
  let query = marketplaceQuery(db, organizationId);
  if (filter.status) query = query.where('m.status', '=', filter.status);
  if (filter.q) query = query.where(sql<boolean>`strpos(lower(m.name), lower(${filter.q})) > 0`);
  if (filter.visibleToMemberId) query = query.where(visibleTo(MARKETPLACE.ref, 'm', filter.visibleToMemberId));
  if (after) query = query.where(before('m.created_at', 'm.id', after));
  return query.orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(take).execute();
}

export async function updateMarketplace(
  db: Db,
  organizationId: string,
  id: string,
  patch: { name?: string; description?: string; logo_url?: string; status?: 'active' | 'archived' },
  now: Date,
): Promise<boolean> {
  const result = await db
    .updateTable('marketplaces')
    .set({ ...patch, updated_at: now })
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Deletes the marketplace with its memberships and grants (the caller holds the transaction). */
export async function deleteMarketplace(db: Db, organizationId: string, id: string): Promise<boolean> {
  await db.deleteFrom('marketplace_plugins').where('marketplace_id', '=', id).where('organization_id', '=', organizationId).execute();
  await db.deleteFrom('marketplace_grants').where('marketplace_id', '=', id).where('organization_id', '=', organizationId).execute();
  const result = await db.deleteFrom('marketplaces').where('id', '=', id).where('organization_id', '=', organizationId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Publishes a plugin; false when it was already there. */
export async function addPlugin(db: Db, m: { organizationId: string; marketplaceId: string; pluginId: string; memberId: string | null; now: Date }): Promise<boolean> {
  const result = await db
    .insertInto('marketplace_plugins')
    .values({ organization_id: m.organizationId, marketplace_id: m.marketplaceId, plugin_id: m.pluginId, added_by_member_id: m.memberId, created_at: m.now })
    .onConflict((oc) => oc.columns(['marketplace_id', 'plugin_id']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

export async function removePlugin(db: Db, organizationId: string, marketplaceId: string, pluginId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('marketplace_plugins')
    .where('organization_id', '=', organizationId)
    .where('marketplace_id', '=', marketplaceId)
    .where('plugin_id', '=', pluginId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** A new marketplace's first plugins in one statement (the built-in catalogue of a new organization). */
export async function addPlugins(db: Db, rows: { organizationId: string; marketplaceId: string; pluginId: string; now: Date }[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('marketplace_plugins')
    .values(rows.map((m) => ({ marketplace_id: m.marketplaceId, plugin_id: m.pluginId, organization_id: m.organizationId, added_by_member_id: null, created_at: m.now })))
    .execute();
}
