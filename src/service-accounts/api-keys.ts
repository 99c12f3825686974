import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { checkNewKey, issueApiKey, type NewKeyInput } from '../api-keys/service';
import { lockForChange } from './service';

/**
 * POST /v1/service-accounts/{id}/api-keys (docs/service-accounts.md#credentials): a key acting as
 * the service account's member, the organization's key. The same checks as a member's own key (a
 * recent sign-in, a scope of known keys the caller holds, a future expiry), and the caller must
 * hold every permission of the account (its key would otherwise hand them more than they hold).
 * The account's row is locked first (404 for another organization's, whatever the body), so a
 * concurrent delete cannot leave a live key behind.
 */
export async function createServiceAccountApiKey(deps: AppDeps, principal: Principal, membership: Membership, serviceAccountId: string, input: NewKeyInput) {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    // Another organization's account is 404 whatever the body says.
    const account = await lockForChange(trx, membership, serviceAccountId);
    const expiresAt = checkNewKey(principal, membership, input, now, deps.settings.freshSessionMaxAgeMs);
    return issueApiKey(trx, deps.audit, {
      organizationId: membership.organizationId,
      memberId: account.member_id,
      serviceAccountId,
      name: input.name,
      expiresAt,
      permissions: input.permissions ?? null,
      now,
    });
  });
}
