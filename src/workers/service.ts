import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, WorkerPrincipal } from '../domain/principal';
import { can, isCreator, missingPermission } from '../access/roles';
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

export const workerNotFound = () => new NotFound('worker_not_found', 'The worker could not be found.');
/** What a stopped worker's own calls (heartbeat, activity, LLM config) answer until a member starts it. */
export const workerStopped = () => new Conflict('worker_stopped', 'The worker is stopped; a member must start it before it reports again.');

export type WorkerStatus = Schemas['Worker']['status'];

/**
 * docs/workers-and-usage.md#worker-lifecycle-and-metered-usage: `stopped` by a member; `pending` before the first heartbeat; `online` while
 * the last heartbeat is at most WORKER_STALE_AFTER old (and not from before a stop); else `offline`.
 */
export function workerStatus(row: Pick<store.WorkerRow, 'stopped_at' | 'last_heartbeat_at' | 'online_since'>, now: Date, staleAfterMs: number): WorkerStatus {
  if (row.stopped_at) return 'stopped';
  if (!row.last_heartbeat_at) return 'pending';
  if (row.online_since && now.getTime() - row.last_heartbeat_at.getTime() <= staleAfterMs) return 'online';
  return 'offline';
}

export function toWorker(row: store.WorkerRow, deps: Pick<AppDeps, 'clock' | 'settings'>): Schemas['Worker'] {
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
    status: workerStatus(row, deps.clock.now(), deps.settings.workerStaleAfterMs),
    lastHeartbeatAt: row.last_heartbeat_at ? row.last_heartbeat_at.toISOString() : null,
    version: row.version,
    ceiling: { scopes: row.ceiling },
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
export function requireCreatorOrAdmin(membership: Membership, worker: store.WorkerRow): void {
  if (isCreator(membership, worker.created_by_member_id) || can(membership, 'workers.manage')) return;
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
    await recordChange(trx, deps.audit, {
      action: 'worker.created',
      target: { type: 'worker', id: inserted.id },
      changes: created({ name: input.name, description: input.description ?? null, runtimeUrl: input.runtimeUrl ?? null, hostToken }),
    });
    return inserted;
  });
  return { item: toWorker(row, deps), hostToken };
}

export async function listWorkers(deps: AppDeps, membership: Membership, page: PageRequest): Promise<Page<Schemas['Worker']>> {
  return deps.cursors.page<store.WorkerRow & Position, Schemas['Worker']>('workers', page, (after, take) => store.listWorkers(deps.db, membership.organizationId, after, take), (row) => toWorker(row, deps));
}

export async function getWorker(deps: AppDeps, membership: Membership, workerId: string) {
  const row = await store.findWorker(deps.db, membership.organizationId, workerId);
  if (!row) throw workerNotFound();
  return toWorker(row, deps);
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
    await recordChange(trx, deps.audit, {
      action: 'worker.updated',
      target: { type: 'worker', id: workerId },
      changes: changed({ name: current.name, description: current.description, runtimeUrl: current.runtime_url }, changes),
    });
    return toWorker(row, deps);
  });
}

export async function deleteWorker(deps: AppDeps, membership: Membership, workerId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const current = await store.findWorker(trx, membership.organizationId, workerId);
    if (!current) throw workerNotFound();
    requireCreatorOrAdmin(membership, current);
    await store.deleteWorker(trx, membership.organizationId, workerId);
    await recordChange(trx, deps.audit, { action: 'worker.deleted', target: { type: 'worker', id: workerId }, changes: deleted({ name: current.name }) });
  });
}

/** GET /v1/workers/{id}/runtime (docs/workers-and-usage.md#workers-telemetry-and-analytics): the runtime's own JSON object, passed through. */
export async function getWorkerRuntime(deps: AppDeps, membership: Membership, workerId: string): Promise<Record<string, unknown>> {
  const worker = await store.findWorkerWithSealedToken(deps.db, membership.organizationId, workerId);
  if (!worker) throw workerNotFound();
  requireCreatorOrAdmin(membership, worker);
  if (worker.stopped_at) throw new Conflict('worker_runtime_unavailable', 'The worker is stopped; start it to reach its runtime.');
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
    const touched = await store.touchWorker(trx, worker.organizationId, worker.workerId, now);
    if (!touched) throw new Unauthorized('The worker token is not valid for this worker.');
    // The throw rolls back the touch: a stopped worker's activity stores nothing.
    if (touched.stopped) throw workerStopped();
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
