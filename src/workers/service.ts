import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, WorkerPrincipal } from '../domain/principal';
import { can, missingPermission } from '../access/roles';
import { randomSecret, sha256Hex } from '../lib/crypto';
import { Conflict, NotFound, Unauthorized } from '../lib/errors';
import { newId } from '../lib/ids';
import type { Page, PageRequest, Position } from '../lib/pagination';
import { enforceLimit } from '../plans';
import * as store from './store';
import { fetchRuntimeVersions } from './runtime-client';
import { checkTenantUrl } from '../outbound';
import { changed, created, deleted, recordChange } from '../audit';

type Schemas = components['schemas'];

const workerNotFound = () => new NotFound('worker_not_found', 'The worker could not be found.');

export function toWorker(row: store.WorkerRow): Schemas['Worker'] {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    description: row.description,
    runtimeUrl: row.runtime_url,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    lastActivityAt: row.last_activity_at ? row.last_activity_at.toISOString() : null,
  };
}

function toActivity(row: store.ActivityRow): Schemas['WorkerActivity'] {
  return {
    id: row.id,
    workerId: row.worker_id,
    type: row.type,
    at: row.occurred_at.toISOString(),
    detail: row.detail,
    receivedAt: row.received_at.toISOString(),
  };
}

/** Writes and runtime calls: the worker's creator, or a member holding `workers.manage`. */
function requireCreatorOrAdmin(membership: Membership, worker: store.WorkerRow): void {
  if (worker.created_by_member_id === membership.memberId || can(membership, 'workers.manage')) return;
  throw missingPermission('workers.manage');
}

export async function createWorker(deps: AppDeps, membership: Membership, input: Schemas['CreateWorkerBody']) {
  if (input.runtimeUrl) checkTenantUrl(deps.outbound.policy, input.runtimeUrl, ['body', 'runtimeUrl']);
  const hostToken = randomSecret('cpw');
  const row = await deps.db.transaction().execute(async (trx) => {
    await enforceLimit(trx, deps.settings, membership.organizationId, 'workers');
    const inserted = await store.insertWorker(trx, {
      id: newId('worker'),
      organizationId: membership.organizationId,
      name: input.name,
      description: input.description ?? null,
      runtimeUrl: input.runtimeUrl ?? null,
      tokenHash: sha256Hex(hostToken),
      tokenSealed: deps.secrets.encrypt(hostToken),
      createdByMemberId: membership.memberId,
      now: deps.clock.now(),
    });
    await recordChange(trx, {
      action: 'worker.created',
      target: { type: 'worker', id: inserted.id },
      changes: created({ name: input.name, description: input.description ?? null, runtimeUrl: input.runtimeUrl ?? null, hostToken }),
    });
    return inserted;
  });
  return { item: toWorker(row), hostToken };
}

export async function listWorkers(deps: AppDeps, membership: Membership, page: PageRequest): Promise<Page<Schemas['Worker']>> {
  return deps.cursors.page<store.WorkerRow & Position, Schemas['Worker']>('workers', page, (after, take) => store.listWorkers(deps.db, membership.organizationId, after, take), toWorker);
}

export async function getWorker(deps: AppDeps, membership: Membership, workerId: string) {
  const row = await store.findWorker(deps.db, membership.organizationId, workerId);
  if (!row) throw workerNotFound();
  return toWorker(row);
}

export async function updateWorker(deps: AppDeps, membership: Membership, workerId: string, changes: Schemas['UpdateWorkerBody']) {
  if (changes.runtimeUrl) checkTenantUrl(deps.outbound.policy, changes.runtimeUrl, ['body', 'runtimeUrl']);
  return deps.db.transaction().execute(async (trx) => {
    const current = await store.findWorker(trx, membership.organizationId, workerId);
    if (!current) throw workerNotFound();
    requireCreatorOrAdmin(membership, current);
    const row = await store.updateWorker(trx, membership.organizationId, workerId, {
      name: changes.name,
      description: changes.description,
      runtimeUrl: changes.runtimeUrl,
      now: deps.clock.now(),
    });
    if (!row) throw workerNotFound();
    await recordChange(trx, {
      action: 'worker.updated',
      target: { type: 'worker', id: workerId },
      changes: changed({ name: current.name, description: current.description, runtimeUrl: current.runtime_url }, changes),
    });
    return toWorker(row);
  });
}

export async function deleteWorker(deps: AppDeps, membership: Membership, workerId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const current = await store.findWorker(trx, membership.organizationId, workerId);
    if (!current) throw workerNotFound();
    requireCreatorOrAdmin(membership, current);
    await store.deleteWorker(trx, membership.organizationId, workerId);
    await recordChange(trx, { action: 'worker.deleted', target: { type: 'worker', id: workerId }, changes: deleted({ name: current.name }) });
  });
}

/** interface-spec 4.12: the runtime's own JSON object, passed through. */
export async function getWorkerRuntime(deps: AppDeps, membership: Membership, workerId: string): Promise<Record<string, unknown>> {
  const worker = await store.findWorkerWithSealedToken(deps.db, membership.organizationId, workerId);
  if (!worker) throw workerNotFound();
  requireCreatorOrAdmin(membership, worker);
  if (!worker.runtime_url) throw new Conflict('worker_runtime_unavailable', 'The worker has no runtime URL.');
  return fetchRuntimeVersions({
    outbound: deps.outbound,
    runtimeUrl: worker.runtime_url,
    hostToken: deps.secrets.decrypt(worker.host_token_sealed),
    timeoutMs: deps.settings.workerRuntimeTimeoutMs,
  });
}

/**
 * Called by the worker itself: its host token was resolved into `worker` (src/principal/); a token
 * of another worker is 401 like a wrong one. The worker row is touched first, inside the
 * transaction, so a worker deleted meanwhile stores nothing.
 */
export async function reportActivity(deps: AppDeps, worker: WorkerPrincipal, workerId: string, events: Schemas['ActivityEventInput'][]): Promise<number> {
  if (worker.workerId !== workerId) throw new Unauthorized('The worker token is not valid for this worker.');
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    if (!(await store.touchWorker(trx, worker.organizationId, worker.workerId, now))) throw new Unauthorized('The worker token is not valid for this worker.');
    await store.insertActivity(
      trx,
      events.map((e) => ({
        id: newId('workerActivity'),
        organizationId: worker.organizationId,
        workerId: worker.workerId,
        type: e.type,
        at: new Date(e.at),
        detail: e.detail ?? null,
        now,
      })),
    );
    return events.length;
  });
}

export async function listActivity(deps: AppDeps, membership: Membership, workerId: string, page: PageRequest): Promise<Page<Schemas['WorkerActivity']>> {
  const worker = await store.findWorker(deps.db, membership.organizationId, workerId);
  if (!worker) throw workerNotFound();
  return deps.cursors.page<store.ActivityRow & Position, Schemas['WorkerActivity']>(
    `worker-activity:${worker.id}`,
    page,
    (after, take) => store.listActivity(deps.db, membership.organizationId, worker.id, after, take),
    toActivity,
  );
}
