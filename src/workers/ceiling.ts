import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { requireHeld, requireKnownPermissions, sortedPermissions } from '../access/role-permissions';
import { recordChange } from '../audit';
import * as store from './store';
import { requireCreatorOrAdmin, toWorker, workerNotFound } from './service';

/**
 * PUT /v1/workers/{id}/ceiling (docs/workers-and-usage.md#workers-as-oauth-clients): the most the
 * worker's own OAuth tokens may do. Its creator or a `workers.manage` holder, who must hold every
 * key they set (no escalation); the whole set is replaced. A token already issued is narrowed from
 * its next request: the API reads the ceiling with the token's one principal query.
 */
export async function setWorkerCeiling(deps: AppDeps, membership: Membership, workerId: string, input: components['schemas']['WorkerCeiling']) {
  return deps.db.transaction().execute(async (trx) => {
    const current = await store.findWorker(trx, membership.organizationId, workerId);
    if (!current) throw workerNotFound();
    requireCreatorOrAdmin(membership, current);
    // The worker is found and the caller may change it before its keys are read (another organization's worker is 404 whatever the body).
    requireKnownPermissions(input.scopes, ['body', 'scopes']);
    const next = sortedPermissions(input.scopes);
    requireHeld(membership, next);
    const row = await store.setCeiling(trx, membership.organizationId, workerId, next, deps.clock.now());
    if (!row) throw workerNotFound();
    await recordChange(trx, deps.audit, {
      action: 'worker.ceiling_updated',
      target: { type: 'worker', id: workerId },
      changes: { ceiling: { from: current.ceiling, to: next } },
    });
    return toWorker(row, deps);
  });
}
