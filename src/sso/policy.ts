import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import type { Db } from '../db/schema';
import { requireFreshSession } from '../access/role-permissions';
import { NotFound } from '../lib/errors';
import { requireFeature } from '../plans';
import { recordChange } from '../audit';
import { lockSsoEnforced, setSsoEnforced } from '../org/service';

const organizationNotFound = () => new NotFound('organization_not_found', 'The organization could not be found.');

async function enforced(db: Db, organizationId: string): Promise<boolean | undefined> {
  const row = await db.selectFrom('organizations').select('sso_enforced').where('id', '=', organizationId).executeTakeFirst();
  return row?.sso_enforced;
}

export async function getPolicy(deps: AppDeps, membership: Membership) {
  const enforce = await enforced(deps.db, membership.organizationId);
  if (enforce === undefined) throw organizationNotFound();
  return { enforce };
}

/** Turning enforcement on needs the plan feature `sso`; turning it off never does (no lock-in). */
export async function putPolicy(deps: AppDeps, principal: Principal, membership: Membership, enforce: boolean) {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  if (enforce) await requireFeature(deps.db, deps.settings, membership.organizationId, 'sso');
  await deps.db.transaction().execute(async (trx) => {
    const current = await lockSsoEnforced(trx, membership.organizationId);
    if (current === undefined) throw organizationNotFound();
    await setSsoEnforced(trx, membership.organizationId, enforce);
    await recordChange(trx, deps.audit, {
      action: 'sso_policy.updated',
      target: { type: 'organization', id: membership.organizationId },
      changes: { enforce: { from: current, to: enforce } },
    });
  });
  return { enforce };
}
