import type { Db } from '../db/schema';
import type { WorkerPrincipal, WorkerTokenClaim } from '../domain/principal';
import { sha256Hex } from '../lib/crypto';

/**
 * A worker's host token → the worker, found by the token's SHA-256 (no secret is compared in
 * variable time). Whether the worker may act on the route's worker is the service's question.
 */
export async function principalFromWorkerToken(db: Db, token: string): Promise<WorkerPrincipal | null> {
  const row = await db.selectFrom('workers').select(['id', 'organization_id']).where('host_token_hash', '=', sha256Hex(token)).executeTakeFirst();
  return row ? { kind: 'worker', workerId: row.id, organizationId: row.organization_id } : null;
}

/**
 * The token's hash only, no query: for an operation that checks the token in the statement that
 * does its work (one round trip instead of two on the heartbeat, a hot path).
 */
export function workerClaimFromToken(token: string): WorkerTokenClaim {
  return { kind: 'workerClaim', tokenHash: sha256Hex(token) };
}
