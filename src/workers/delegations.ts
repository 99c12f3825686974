import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { createDelegation } from '../authorizations/delegations';
import * as store from './store';
import { workerNotFound, workerStopped } from './service';

/**
 * POST /v1/workers/{id}/delegations (docs/workers-and-usage.md#delegations-and-token-exchange):
 * the calling member lets a worker of their organization act for them. The authorization itself
 * is src/authorizations' (its table); here, the worker must exist in the organization and run.
 */
export async function delegateToWorker(deps: AppDeps, membership: Membership, workerId: string, input: components['schemas']['CreateDelegationBody']) {
  const worker = await store.findWorker(deps.db, membership.organizationId, workerId);
  if (!worker) throw workerNotFound();
  if (worker.stopped_at) throw workerStopped();
  return createDelegation(deps, membership, { id: worker.id, name: worker.name }, input);
}
