import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Db } from '../db/schema';
import type { Membership } from '../domain/principal';
import type { WorkerTokenClaim } from '../domain/principal';
import { randomSecret, sha256Hex } from '../lib/crypto';
import { Unauthorized } from '../lib/errors';
import { changed, recordChange } from '../audit';
import * as lifecycle from './lifecycle-store';
import { requireCreatorOrAdmin, toWorker, workerNotFound, workerStopped } from './service';

type Schemas = components['schemas'];

/**
 * Called by the worker with its token, which the heartbeat's own statement checks (the security
 * handler only hashed it: `deferredCredentials` in src/server/registry.ts). The time is the
 * service's own clock, never the worker's. A wrong token, a token of another worker or of a
 * deleted worker is 401; a stopped worker is 409.
 */
export async function heartbeat(deps: AppDeps, claim: WorkerTokenClaim, workerId: string, body: Schemas['HeartbeatBody']): Promise<'online'> {
  const result = await lifecycle.recordHeartbeat(deps.db, {
    workerId,
    tokenHash: claim.tokenHash,
    now: deps.clock.now(),
    staleAfterMs: deps.settings.workerStaleAfterMs,
    version: body.version ?? null,
    openSessions: body.openSessions ?? null,
  });
  if (!result) throw new Unauthorized('The worker token is not valid for this worker.');
  if (result.stopped) throw workerStopped();
  return 'online';
}

/** Stopping an already stopped worker (or starting a running one) changes nothing and answers the worker. */
export async function setStopped(deps: AppDeps, membership: Membership, workerId: string, stopped: boolean): Promise<Schemas['Worker']> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const current = await lifecycle.findWorkerForUpdate(trx, membership.organizationId, workerId);
    if (!current) throw workerNotFound();
    requireCreatorOrAdmin(membership, current);
    if ((current.stopped_at !== null) === stopped) return toWorker(current, deps);
    const row = stopped
      ? await lifecycle.stopWorker(trx, membership.organizationId, workerId, now)
      : await lifecycle.startWorker(trx, membership.organizationId, workerId, now);
    if (!row) throw workerNotFound();
    await recordChange(trx, deps.audit, {
      action: stopped ? 'worker.stopped' : 'worker.started',
      target: { type: 'worker', id: workerId },
      changes: changed({ stoppedAt: current.stopped_at }, { stoppedAt: row.stopped_at }),
    });
    return toWorker(row, deps);
  });
}

/**
 * Replaces the host token of every worker a member of the user created with a new one nobody is
 * shown (an account taken over: src/account/takeover.ts): the old tokens stop matching at once;
 * an administrator rotates to get a token to hand the worker. Returns how many.
 */
export async function replaceTokensOfWorkersCreatedByUser(trx: Db, deps: Pick<AppDeps, 'secrets' | 'clock'>, userId: string): Promise<number> {
  const workers = await lifecycle.lockWorkersCreatedByUser(trx, userId);
  for (const worker of workers) {
    const hostToken = randomSecret('cpw');
    await lifecycle.replaceToken(trx, worker.organization_id, worker.id, { hash: sha256Hex(hostToken), sealed: deps.secrets.encrypt(hostToken), now: deps.clock.now() });
  }
  return workers.length;
}

/** A new host token, shown once; the old one stops matching at once (only its hash was stored). */
export async function rotateToken(deps: AppDeps, membership: Membership, workerId: string): Promise<string> {
  const hostToken = randomSecret('cpw');
  await deps.db.transaction().execute(async (trx) => {
    const current = await lifecycle.findWorkerForUpdate(trx, membership.organizationId, workerId);
    if (!current) throw workerNotFound();
    requireCreatorOrAdmin(membership, current);
    const replaced = await lifecycle.replaceToken(trx, membership.organizationId, workerId, {
      hash: sha256Hex(hostToken),
      sealed: deps.secrets.encrypt(hostToken),
      now: deps.clock.now(),
    });
    if (!replaced) throw workerNotFound();
    // The token itself is never in the entry (recordChange would redact it anyway).
    await recordChange(trx, deps.audit, { action: 'worker.token_rotated', target: { type: 'worker', id: workerId } });
  });
  return hostToken;
}
