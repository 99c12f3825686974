import type { Db } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { maxRole, requireRole, resolveResourceRole, visibilityOf, type ResourceRole } from '../access/resource-roles';
import { authorize } from '../access/roles';
import { NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest } from '../lib/pagination';
import { PLUGIN } from '../grants/resources';
import { creatorGrants, type ResourceGuard } from '../grants/service';
import { grantsInsert, withPosition } from '../grants/store';
import { addPlugin, authorizeMarketplace, lockMarketplace, marketplaceNotFound } from '../marketplaces/service';
import { componentTypeOf, toComponent, toPlugin } from './mappers';
import * as store from './store';
import { changed, created, recordChange, writeWithAudit, type AuditCtes, type Change } from '../audit';

export const pluginNotFound = () => new NotFound('plugin_not_found', 'The plugin could not be found.');

/** Custom plugins record where they came from in the manifest source. */
const CUSTOM_SOURCE = { format: 'custom', origin: 'organization', trusted: false } as const;

/**
 * The caller's role on a plugin: its plugin grants, or viewer through an active marketplace the
 * caller has a role on. Not in the organization → 404; too low → 403 `plugin_<role>_required`.
 */
export async function authorizePlugin(db: Db, membership: Membership, pluginId: string, needed: ResourceRole): Promise<store.PluginRow> {
  const row = await store.findPlugin(db, membership.organizationId, pluginId);
  if (!row) throw pluginNotFound();
  let role = await resolveResourceRole(db, PLUGIN.ref, membership, pluginId);
  if (role === null && (await store.reachesThroughMarketplace(db, membership.organizationId, pluginId, membership.memberId))) {
    role = maxRole(role, 'viewer');
  }
  requireRole(role, needed, 'plugin');
  return row;
}

export const pluginGuard: ResourceGuard = (db, membership, id, needed) => authorizePlugin(db, membership, id, needed);

/** Plugins with their components' manifest and active marketplaces: two batched queries per page. */
export async function hydrate(db: Db, organizationId: string, rows: store.PluginRow[]) {
  const ids = rows.map((r) => r.id);
  const [parts, markets] = await Promise.all([store.componentSummaries(db, organizationId, ids), store.marketplacesOf(db, organizationId, ids)]);
  return rows.map((row) =>
    toPlugin(
      row,
      parts.filter((p) => p.plugin_id === row.id),
      markets.filter((m) => m.plugin_id === row.id),
    ),
  );
}

async function one(db: Db, organizationId: string, row: store.PluginRow) {
  return (await hydrate(db, organizationId, [row]))[0]!;
}

export interface CreatePluginBody {
  name: string;
  description?: string;
  components?: { input: Record<string, unknown> & { normalizedPayloadJson?: Record<string, unknown> } }[];
  orgWide?: boolean;
  marketplaceId?: string;
}

/**
 * All or nothing. Without a marketplace: the plugin, all components, the creator's manager grant,
 * the org-wide viewer grant, the audit entry and its event are ONE statement (one round trip,
 * atomic on its own, `writeWithAudit`); only an organization with more matching webhook endpoints
 * than that statement carries delivery ids for takes a transaction of the same writes.
 * With a marketplace it runs in a transaction after the marketplace is locked and the caller's
 * editor role checked, and the membership follows; a failure at any step (the marketplace
 * missing, archived or not editable) writes nothing. The answer is built from what was written,
 * not read back.
 */
export async function createPlugin(deps: AppDeps, membership: Membership, body: CreatePluginBody) {
  if (body.orgWide) authorize(membership, 'resources.manage');
  const { organizationId, memberId } = membership;
  const now = deps.clock.now();
  const id = newId('plugin');
  const components: store.NewComponent[] = (body.components ?? []).map((c, position) => ({
    id: newId('pluginComponent'),
    position,
    type: componentTypeOf(c.input),
    input: c.input,
  }));
  const plugin: store.NewPlugin = {
    id,
    organizationId,
    name: body.name,
    description: body.description ?? '',
    source: { ...CUSTOM_SOURCE, reference: `plugin:${id}` },
    createdByMemberId: memberId,
    now,
  };
  const grants = creatorGrants(PLUGIN, { organizationId, resourceId: id, memberId, now, orgWideRole: body.orgWide ? 'viewer' : undefined });
  const grantRows = { insert: grantsInsert(PLUGIN, grants), count: grants.length };
  const write = (db: Db, audit?: AuditCtes) => store.insertPluginWithComponents(db, plugin, components, grantRows, audit);
  const parts = components.map((c) => ({ type: c.type, payload: (c.input.normalizedPayloadJson as Record<string, unknown> | undefined) ?? null }));
  const change: Change = {
    action: 'plugin.created',
    target: { type: 'plugin', id },
    changes: created({ name: body.name, description: body.description ?? '', orgWide: body.orgWide ?? false, marketplaceId: body.marketplaceId, componentTypes: components.map((c) => c.type) }),
  };
  if (!body.marketplaceId) {
    return writeWithAudit(
      deps.audit,
      change,
      'components',
      async (audit) => toPlugin(await write(deps.db, audit), parts, []),
      () =>
        deps.db.transaction().execute(async (trx) => {
          const row = await write(trx);
          await recordChange(trx, deps.audit, change);
          return toPlugin(row, parts, []);
        }),
    );
  }
  const marketplaceId = body.marketplaceId;
  return deps.db.transaction().execute(async (trx) => {
    // Lock the marketplace so it cannot be archived or deleted between the check and the insert.
    const locked = await lockMarketplace(trx, organizationId, marketplaceId);
    if (!locked || locked.status !== 'active') throw marketplaceNotFound();
    const marketplace = await authorizeMarketplace(trx, membership, marketplaceId, 'editor');
    const row = await write(trx);
    await addPlugin(trx, { organizationId, marketplaceId: marketplace.id, pluginId: id, memberId, now });
    await recordChange(trx, deps.audit, change);
    return toPlugin(row, parts, [{ id: marketplace.id, name: marketplace.name }]);
  });
}

export async function listPlugins(deps: AppDeps, membership: Membership, query: { status?: store.PluginStatus; q?: string } & PageRequest) {
  const filter = { status: query.status, q: query.q, visibleToMemberId: visibilityOf(membership) };
  const page = await deps.cursors.page(
    'plugins',
    query,
    (after, take) => store.listPlugins(deps.db, membership.organizationId, filter, after, take).then((rows) => withPosition(rows)),
    (row) => row,
  );
  return { items: await hydrate(deps.db, membership.organizationId, page.items), nextCursor: page.nextCursor };
}

export async function getPlugin(deps: AppDeps, membership: Membership, id: string) {
  return one(deps.db, membership.organizationId, await authorizePlugin(deps.db, membership, id, 'viewer'));
}

export async function updatePlugin(deps: AppDeps, membership: Membership, id: string, body: { name?: string; description?: string }) {
  return deps.db.transaction().execute(async (trx) => {
    const before = await authorizePlugin(trx, membership, id, 'editor');
    const row = await store.updatePlugin(trx, membership.organizationId, id, { name: body.name, description: body.description }, deps.clock.now());
    if (!row) throw pluginNotFound();
    await recordChange(trx, deps.audit, { action: 'plugin.updated', target: { type: 'plugin', id }, changes: changed({ name: before.name, description: before.description }, body) });
    return one(trx, membership.organizationId, row);
  });
}

export async function setPluginStatus(deps: AppDeps, membership: Membership, id: string, status: store.PluginStatus) {
  return deps.db.transaction().execute(async (trx) => {
    const current = await authorizePlugin(trx, membership, id, 'manager');
    const row = current.status === status ? current : await store.updatePlugin(trx, membership.organizationId, id, { status }, deps.clock.now());
    if (!row) throw pluginNotFound();
    await recordChange(trx, deps.audit, {
      action: status === 'archived' ? 'plugin.archived' : 'plugin.restored',
      target: { type: 'plugin', id },
      changes: changed({ status: current.status }, { status }),
    });
    return one(trx, membership.organizationId, row);
  });
}

export async function listComponents(deps: AppDeps, membership: Membership, id: string, page: PageRequest) {
  await authorizePlugin(deps.db, membership, id, 'viewer');
  return deps.cursors.page(
    `plugin_components:${id}`,
    page,
    (after, take) => store.listComponents(deps.db, membership.organizationId, id, after, take).then((rows) => withPosition(rows)),
    (row) => toComponent(row),
  );
}

/** The plugin rows of a page (the marketplace's published listing reads them through here). */
export { listPlugins as listPluginRows } from './store';
