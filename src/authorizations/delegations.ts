import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { recordChange } from '../audit';
import { requireHeld, requireKnownPermissions, sortedPermissions } from '../access/role-permissions';
import { sha256Hex } from '../lib/crypto';
import { newId } from '../lib/ids';
import { apiResource } from '../oauth/resources';
import { signSubjectToken } from '../oauth/subject-tokens';
import * as store from './store';
import { toAuthorization } from './service';

/**
 * A member's delegation to a worker (docs/workers-and-usage.md#delegations-and-token-exchange): an
 * authorization (`oag_`, client type `worker`) of the member's own keys, answered once with the
 * subject token the worker exchanges (RFC 8693) for tokens acting as the member. A new delegation
 * to the same worker replaces the member's last one (one live authorization per member, client
 * and resource). Listed and revoked as every authorization of the member (./service.ts).
 */
export async function createDelegation(
  deps: AppDeps,
  membership: Membership,
  worker: { id: string; name: string },
  input: { scopes: string[]; expiresIn?: number },
) {
  requireKnownPermissions(input.scopes, ['body', 'scopes']);
  const scopes = sortedPermissions(input.scopes);
  requireHeld(membership, scopes);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + (input.expiresIn ?? 3600) * 1000);
  const id = newId('oauthAuthorization');
  const subjectToken = await signSubjectToken(deps.db, deps.secrets, deps.settings.publicBaseUrl, {
    memberId: membership.memberId,
    organizationId: membership.organizationId,
    workerId: worker.id,
    authorizationId: id,
    scopes,
    issuedAt: now,
    expiresAt,
  });
  const row = await deps.db.transaction().execute(async (trx) => {
    const replaced = await store.revokeDelegationsTo(trx, membership.memberId, worker.id, now);
    const inserted = await store.insert(
      trx,
      {
        id,
        organizationId: membership.organizationId,
        memberId: membership.memberId,
        clientId: worker.id,
        clientType: 'worker',
        clientName: worker.name,
        scopes,
        resource: apiResource(deps.settings.publicBaseUrl),
        grantKey: null,
        expiresAt,
        subjectTokenHash: sha256Hex(subjectToken),
      },
      now,
    );
    await recordChange(trx, deps.audit, {
      action: 'oauth_authorization.created',
      target: { type: 'oauth_authorization', id },
      changes: {
        clientId: { from: null, to: worker.id },
        clientType: { from: null, to: 'worker' },
        scopes: { from: null, to: scopes },
        expiresAt: { from: null, to: expiresAt.toISOString() },
        ...(replaced.length > 0 ? { replaced: { from: replaced.map((r) => r.id), to: null } } : {}),
      },
    });
    return inserted;
  });
  return { item: toAuthorization(row), subjectToken };
}

/** The live delegation a presented subject token belongs to (the token exchange checks whose and for whom). */
export function delegationForExchange(deps: AppDeps, where: { id: string; subjectToken: string }) {
  return store.findDelegationForExchange(deps.db, { id: where.id, subjectTokenHash: sha256Hex(where.subjectToken) }, deps.clock.now());
}
