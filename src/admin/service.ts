import { positioned } from '../lib/pagination';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import { NotFound } from '../lib/errors';
import type { PageRequest } from '../lib/pagination';
import { setOrganizationPlan, type Plan } from '../org/service';
import * as store from './store';
import type { AdminOrganizationRow } from './store';
import { changed, recordChange } from '../audit';

type Schemas = components['schemas'];
type Listed = Schemas['AdminOrganization'] | Schemas['AdminPurgedOrganization'];

function toAdminOrganization(row: AdminOrganizationRow): Schemas['AdminOrganization'] {
  const owner =
    row.owner_member_id && row.owner_user_id && row.owner_email
      ? { memberId: row.owner_member_id, userId: row.owner_user_id, name: row.owner_name, email: row.owner_email, image: row.owner_image }
      : null;
  return {
    id: row.id,
    name: row.name,
    plan: row.plan as Schemas['Plan'],
    owner,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    memberCount: Number(row.member_count),
    state: row.deletion_scheduled_at ? 'deletion_scheduled' : 'active',
    deletionScheduledAt: row.deletion_scheduled_at?.toISOString() ?? null,
    purgeAt: row.purge_at?.toISOString() ?? null,
  };
}

function toPurgedOrganization(row: store.TombstoneRow): Schemas['AdminPurgedOrganization'] {
  return {
    id: row.id,
    state: 'purged',
    nameSha256: row.name_sha256,
    deletedAt: row.deleted_at.toISOString(),
    deletedByUserId: row.deleted_by_user_id,
    purgedAt: row.created_at.toISOString(),
  };
}

/** The platform administrators' routes (`x-platform-admin` in the contract: the router lets no one else in). */
/**
 * Every organization, newest first, or those of one `state`: `active`, `deletion_scheduled`
 * (locked, awaiting their purge), `purged` (the tombstones a purge leaves: no name, its SHA-256).
 */
export async function listOrganizations(deps: AppDeps, query: PageRequest & { state?: 'active' | 'deletion_scheduled' | 'purged' }) {
  const { state } = query;
  if (state === 'purged') {
    return deps.cursors.page(
      'admin-tombstones',
      query,
      async (after, take) => positioned(await store.listTombstones(deps.db, after, take)),
      (row): Listed => toPurgedOrganization(row),
    );
  }
  return deps.cursors.page(
    'admin-organizations',
    query,
    async (after, take) => positioned(await store.listOrganizations(deps.db, after, take, state)),
    (row): Listed => toAdminOrganization(row),
  );
}

export async function setPlan(deps: AppDeps, organizationId: string, plan: Plan) {
  const notFound = () => new NotFound('organization_not_found', 'The organization could not be found.');
  return deps.db.transaction().execute(async (trx) => {
    const before = await store.findOrganization(trx, organizationId);
    if (!before || !(await setOrganizationPlan(trx, organizationId, plan, deps.clock.now()))) throw notFound();
    const row = await store.findOrganization(trx, organizationId);
    if (!row) throw notFound();
    // A platform admin acts from outside the organization: no member id there.
    await recordChange(trx, deps.audit, {
      organizationId,
      actorMemberId: null,
      action: 'organization.plan_changed',
      target: { type: 'organization', id: organizationId },
      changes: changed({ plan: before.plan }, { plan }),
    });
    return toAdminOrganization(row);
  });
}
