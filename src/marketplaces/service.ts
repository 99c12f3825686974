import type { components } from '../../generated/api';
import type { Db } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { requireRole, resolveResourceRole, visibilityOf, type ResourceRole } from '../access/resource-roles';
import { Conflict, Forbidden, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest } from '../lib/pagination';
import { MARKETPLACE } from '../grants/resources';
import { grantCreator, type ResourceGuard } from '../grants/service';
import { withPosition } from '../grants/store';
import * as store from './store';
import { changed, created, deleted, recordChange } from '../audit';
import { checkBrowserUrl } from '../outbound';

type Schemas = components['schemas'];

export const marketplaceNotFound = () => new NotFound('marketplace_not_found', 'The marketplace could not be found.');

export function toMarketplace(row: store.MarketplaceRow, deletedAt: Date | null = null): Schemas['Marketplace'] {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    description: row.description,
    logoUrl: row.logo_url,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    deletedAt: deletedAt ? deletedAt.toISOString() : null,
    pluginCount: row.plugin_count,
  };
}

export function toMarketplaceWithStatus(row: store.MarketplaceRow): Schemas['MarketplaceWithStatus'] {
  return { ...toMarketplace(row), status: row.status };
}

/**
 * Who may do what on a marketplace. Not in the organization (or deleted) → 404; in it but the
 * caller's role is too low → 403 with `marketplace_<role>_required`. While a marketplace is
 * archived its grants give nothing (admins stay manager), except that manager grants still count
 * for manager actions, so whoever archived it can restore it.
 */
export async function authorizeMarketplace(db: Db, membership: Membership, marketplaceId: string, needed: ResourceRole): Promise<store.MarketplaceRow> {
  const row = await store.findMarketplace(db, membership.organizationId, marketplaceId);
  if (!row) throw marketplaceNotFound();
  const role = await resolveResourceRole(db, MARKETPLACE.ref, membership, marketplaceId, { includeSuspended: needed === 'manager' });
  requireRole(role, needed, 'marketplace');
  return row;
}

export const marketplaceGuard: ResourceGuard = (db, membership, id, needed) => authorizeMarketplace(db, membership, id, needed);

/** Update and delete answer 403 with the `{reason, message}` variant (docs/api-conventions.md#errors). */
async function authorizeReasonOnly(db: Db, membership: Membership, marketplaceId: string, needed: ResourceRole) {
  try {
    return await authorizeMarketplace(db, membership, marketplaceId, needed);
  } catch (err) {
    throw err instanceof Forbidden ? err.withVariant('reason-only') : err;
  }
}

async function reload(db: Db, membership: Membership, id: string): Promise<store.MarketplaceRow> {
  const row = await store.findMarketplace(db, membership.organizationId, id);
  if (!row) throw marketplaceNotFound();
  return row;
}

export async function createMarketplace(deps: AppDeps, membership: Membership, body: { name: string; description?: string; logoUrl?: string }) {
  if (body.logoUrl !== undefined) checkBrowserUrl(deps.outbound.policy, body.logoUrl, ['body', 'logoUrl']);
  const id = newId('marketplace');
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    await store.insertMarketplace(trx, {
      id,
      organizationId: membership.organizationId,
      name: body.name,
      description: body.description ?? '',
      logoUrl: body.logoUrl ?? null,
      isCustom: true,
      createdByMemberId: membership.memberId,
      now,
    });
    await grantCreator(trx, MARKETPLACE, { organizationId: membership.organizationId, resourceId: id, memberId: membership.memberId, now });
    await recordChange(trx, deps.audit, {
      action: 'marketplace.created',
      target: { type: 'marketplace', id },
      changes: created({ name: body.name, description: body.description ?? '', logoUrl: body.logoUrl ?? null }),
    });
    return toMarketplaceWithStatus(await reload(trx, membership, id));
  });
}

export async function listMarketplaces(deps: AppDeps, membership: Membership, query: { status?: 'active' | 'archived' | 'deleted'; q?: string } & PageRequest) {
  const filter = { status: query.status, q: query.q, visibleToMemberId: visibilityOf(membership) };
  return deps.cursors.page(
    'marketplaces',
    query,
    (after, take) => store.listMarketplaces(deps.db, membership.organizationId, filter, after, take).then((rows) => withPosition(rows)),
    (row) => toMarketplaceWithStatus(row),
  );
}

export async function getMarketplace(deps: AppDeps, membership: Membership, id: string) {
  return toMarketplaceWithStatus(await authorizeMarketplace(deps.db, membership, id, 'viewer'));
}

export async function updateMarketplace(deps: AppDeps, membership: Membership, id: string, body: { name?: string; description?: string; logoUrl?: string }) {
  return deps.db.transaction().execute(async (trx) => {
    const before = await authorizeReasonOnly(trx, membership, id, 'editor');
    if (body.logoUrl !== undefined) checkBrowserUrl(deps.outbound.policy, body.logoUrl, ['body', 'logoUrl']);
    const patch = { name: body.name, description: body.description, logo_url: body.logoUrl };
    if (!(await store.updateMarketplace(trx, membership.organizationId, id, patch, deps.clock.now()))) throw marketplaceNotFound();
    await recordChange(trx, deps.audit, {
      action: 'marketplace.updated',
      target: { type: 'marketplace', id },
      changes: changed({ name: before.name, description: before.description, logoUrl: before.logo_url }, body),
    });
    return toMarketplace(await reload(trx, membership, id));
  });
}

async function setStatus(deps: AppDeps, membership: Membership, id: string, status: 'active' | 'archived') {
  return deps.db.transaction().execute(async (trx) => {
    const row = await authorizeMarketplace(trx, membership, id, 'manager');
    // Archiving an archived marketplace (or restoring an active one) changes nothing.
    if (row.status !== status && !(await store.updateMarketplace(trx, membership.organizationId, id, { status }, deps.clock.now()))) {
      throw marketplaceNotFound();
    }
    await recordChange(trx, deps.audit, {
      action: status === 'archived' ? 'marketplace.archived' : 'marketplace.restored',
      target: { type: 'marketplace', id },
      changes: changed({ status: row.status }, { status }),
    });
    return toMarketplaceWithStatus(await reload(trx, membership, id));
  });
}

export const archiveMarketplace = (deps: AppDeps, membership: Membership, id: string) => setStatus(deps, membership, id, 'archived');
export const restoreMarketplace = (deps: AppDeps, membership: Membership, id: string) => setStatus(deps, membership, id, 'active');

/**
 * Permanent delete of a custom marketplace: memberships, grants and the marketplace in one
 * transaction; the plugins stay. A deleted marketplace is gone, so it is 404 everywhere after.
 */
export async function deleteMarketplace(deps: AppDeps, membership: Membership, id: string) {
  const row = await authorizeReasonOnly(deps.db, membership, id, 'manager');
  if (!row.is_custom) throw new Conflict('managed_marketplace_cannot_be_deleted', 'The built-in marketplace can be archived but not deleted.');
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.deleteMarketplace(trx, membership.organizationId, id))) throw marketplaceNotFound();
    await recordChange(trx, deps.audit, { action: 'marketplace.deleted', target: { type: 'marketplace', id }, changes: deleted({ name: row.name, description: row.description }) });
  });
  return toMarketplace({ ...row, plugin_count: 0, updated_at: now }, now);
}

/** What plugin creation and the built-in catalogue write in their own transactions: the marketplace rows stay this area's. */
export { addPlugin, addPlugins, insertMarketplace, lockMarketplace } from './store';
