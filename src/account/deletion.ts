import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { Conflict, Invalid, Unauthenticated, Unauthorized } from '../lib/errors';
import { verifyPassword } from '../lib/crypto';
import * as limits from '../protection/rate-limit';
import { recordChange } from '../audit';
import { queueMail } from '../mail/queue';
import { openMembershipsOfUser } from '../members/memberships';
import { removeInTransaction } from '../members/service';
import * as users from '../users/service';

const ownerMustTransfer = () =>
  new Conflict('owner_must_transfer', 'You own an organization: transfer its ownership (POST /v1/members/{memberId}/transfer-ownership) before deleting your account.');

/**
 * DELETE /v1/me (docs/accounts.md#the-callers-own-account). A fresh session, and the password when the account has
 * one (wrong ones count against the sign-in limits, as reauthentication's do). In one
 * transaction: every membership ends as a removal does (its API keys revoked, its teams left,
 * through src/members), each organization records `member.account_deleted` naming only the member,
 * and the user row goes, taking its sessions, second factors, SSO links and link tokens with it
 * (ON DELETE CASCADE). The ended memberships stay, with no user, so the organizations' records of
 * them keep pointing at something. A notice goes to the address the account had.
 */
export async function deleteAccount(deps: AppDeps, principal: Principal, password: string | undefined, ip: string): Promise<void> {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  const user = await users.findUser(deps.db, principal.userId);
  if (!user) throw new Unauthorized();
  // Refused before anything is written (and again inside, should ownership arrive meanwhile).
  if ((await openMembershipsOfUser(deps.db, user.id)).some((m) => m.role === 'owner')) throw ownerMustTransfer();
  await checkPassword(deps, user.email, password, ip);
  const now = deps.clock.now();
  // The entries carry no personal data: not the address the request came from, nor the user's id.
  const audit = deps.audit ? { ...deps.audit, ip: null, userAgent: null } : null;
  await deps.db.transaction().execute(async (trx) => {
    for (const membership of await openMembershipsOfUser(trx, user.id)) {
      if (!(await removeInTransaction(trx, membership.organizationId, membership.memberId, now))) throw ownerMustTransfer();
      await recordChange(trx, audit, {
        organizationId: membership.organizationId,
        actor: { type: 'member', id: null, memberId: membership.memberId },
        action: 'member.account_deleted',
        target: { type: 'member', id: membership.memberId },
      });
    }
    await queueMail(trx, deps, {
      kind: 'security_notice',
      to: user.email,
      name: user.name,
      title: 'Your account was deleted',
      lines: ['Your account was deleted, with its sessions, API keys and memberships. Nothing of it can be restored.'],
    });
    if (!(await users.deleteUser(trx, user.id))) throw new Unauthorized();
  });
}

/** An account with a password proves it again; one without (SSO, SCIM) relies on the fresh session alone. */
async function checkPassword(deps: AppDeps, email: string, password: string | undefined, ip: string): Promise<void> {
  const credentials = await users.findCredentials(deps.db, email);
  if (!credentials?.password_hash) return;
  if (password === undefined) throw Invalid.at(['body', 'password'], 'password is required: the account has one');
  const key = users.normalizeEmail(email);
  await limits.assertNotLimited(deps, 'signInEmail', key);
  await limits.assertNotLimited(deps, 'signInIp', ip);
  if (!(await verifyPassword(credentials.password_hash, password))) {
    await limits.recordFailure(deps, 'signInEmail', key);
    await limits.recordFailure(deps, 'signInIp', ip);
    throw new Unauthenticated('invalid_credentials', 'The password is incorrect.');
  }
  await limits.clear(deps, 'signInEmail', key);
}
