import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { requireFreshSession, requireOwner } from '../access/role-permissions';
import { Conflict, Invalid, NotFound } from '../lib/errors';
import { created, recordChange } from '../audit';
import { plainName } from '../lib/names';
import { lifecycleListeners } from './lifecycle-listeners';
import * as store from './lifecycle-store';
import * as orgStore from './store';
import { toOrganization } from './mappers';

const orgNotFound = () => new NotFound('organization_not_found', 'The organization could not be found.');

/**
 * DELETE /v1/org (docs/organization-deletion.md#deletion): the owner, with a fresh session, names the
 * organization to confirm. In one transaction the organization is locked (every credential query
 * reads the lock from then on: src/principal), the deletion's audit entry and its
 * `organization.deletion_scheduled` event are written (the last event webhooks get), and the
 * lifecycle listeners run (webhooks pause). Members are mailed by the lifecycle job, in batches
 * (./lifecycle-job.ts), so the request does not grow with the organization.
 */
export async function scheduleDeletion(deps: AppDeps, principal: Principal, membership: Membership, confirm: string): Promise<{ purgeAt: Date }> {
  requireOwner(membership);
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  const now = deps.clock.now();
  const purgeAt = new Date(now.getTime() + deps.settings.orgLifecycle.graceMs);
  return deps.db.transaction().execute(async (trx) => {
    const row = await store.lockLifecycle(trx, membership.organizationId);
    if (!row) throw orgNotFound();
    if (row.deletion_scheduled_at) throw new Conflict('organization_deletion_scheduled', 'The organization is already scheduled for deletion.');
    // The name as stored is the plain form of what was typed (src/lib/names.ts): compare like with like.
    if (plainName(confirm) !== row.name) throw Invalid.at(['body', 'confirm'], "must be the organization's name, exactly");
    await store.markDeletionScheduled(trx, row.id, { now, purgeAt, userId: principal.userId! });
    await recordChange(trx, deps.audit, {
      action: 'organization.deletion_scheduled',
      target: { type: 'organization', id: row.id },
      changes: created({ purgeAt: purgeAt.toISOString() }),
    });
    for (const listener of lifecycleListeners()) await listener.deletionScheduled(trx, row.id, now);
    return { purgeAt };
  });
}

/**
 * POST /v1/org/restore: the owner, with a fresh session, before `purge_at` and before a purge
 * began (409 `organization_purging` after); everything works again from the next request.
 */
export async function restoreOrganization(deps: AppDeps, principal: Principal, membership: Membership) {
  requireOwner(membership);
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const row = await store.lockLifecycle(trx, membership.organizationId);
    if (!row) throw orgNotFound();
    if (!row.deletion_scheduled_at) throw new Conflict('organization_not_deleted', 'The organization is not scheduled for deletion.');
    if (row.purge_started_at || (row.purge_at && row.purge_at.getTime() <= now.getTime())) {
      throw new Conflict('organization_purging', 'The grace period is over: the organization is being purged and can no longer be restored.');
    }
    await store.clearDeletion(trx, row.id, now);
    for (const listener of lifecycleListeners()) await listener.restored(trx, row.id, now);
    await recordChange(trx, deps.audit, { action: 'organization.restored', target: { type: 'organization', id: row.id }, changes: {} });
    const organization = await orgStore.findOrganization(trx, row.id);
    if (!organization) throw orgNotFound();
    return toOrganization(organization, await orgStore.findOwner(trx, row.id));
  });
}
