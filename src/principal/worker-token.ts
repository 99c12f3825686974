import type { Db } from '../db/schema';
import type { WorkerPrincipal, WorkerTokenClaim } from '../domain/principal';
import { sha256Hex } from '../lib/crypto';
import { organizationUnlocked } from './organization-lock';

/**
 * A worker's host token → the worker, found by the token's SHA-256 (no secret is compared in
 * variable time). A worker acts for its creator: while the creator is suspended (SCIM
 * `active: false`) or no longer a member, its token is refused like an unknown one. Whether the
 * worker may act on the route's worker is the service's question.
 */
export async function principalFromWorkerToken(db: Db, token: string): Promise<WorkerPrincipal | null> {
  const row = await db
    .selectFrom('workers as w')
    .innerJoin('members as m', 'm.id', 'w.created_by_member_id')
    .select(['w.id', 'w.organization_id'])
    .where('w.host_token_hash', '=', sha256Hex(token))
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    .where(organizationUnlocked('w.organization_id'))
    .executeTakeFirst();
  return row ? { kind: 'worker', workerId: row.id, organizationId: row.organization_id } : null;
}

/**
 * The token's hash only, no query: for an operation that checks the token in the statement that
 * does its work (one round trip instead of two on the heartbeat, a hot path; that statement checks
 * the creator's membership as the resolver above does).
 */
export function workerClaimFromToken(token: string): WorkerTokenClaim {
  return { kind: 'workerClaim', tokenHash: sha256Hex(token) };
}
