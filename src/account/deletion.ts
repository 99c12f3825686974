import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { AuditContext } from '../domain/audit-context';
import type { Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { Conflict, Invalid, Unauthenticated, Unauthorized } from '../lib/errors';
import { verifyPassword } from '../lib/crypto';
import * as limits from '../protection/rate-limit';
import { recordChange } from '../audit';
import { queueNotice } from '../mail/queue';
import { openMembershipsOfUser } from '../members/memberships';
import { removeInTransaction } from '../members/service';
import * as users from '../users/service';
import { takeOverUnverifiedAccount } from './takeover';
import { userIdOf } from '../access/roles';

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
  const user = await users.findUser(deps.db, userIdOf(principal));
  if (!user) throw new Unauthorized();
  // Refused before anything is written (and again inside, should ownership arrive meanwhile).
  if ((await openMembershipsOfUser(deps.db, user.id)).some((m) => m.role === 'owner')) throw ownerMustTransfer();
  await checkPassword(deps, user.email, password, ip);
  const now = deps.clock.now();
  // The entries carry no personal data: not the address the request came from, nor the user's id.
  const audit = deps.audit ? { ...deps.audit, ip: null, userAgent: null } : null;
  await deps.db.transaction().execute(async (trx) => {
    await endMemberships(trx, audit, user.id, now);
    await queueNotice(trx, deps, {
      kind: 'security_notice',
      to: user.email,
      title: 'Your account was deleted',
      lines: ['Your account was deleted, with its sessions, API keys and memberships. Nothing of it can be restored.'],
    });
    if (!(await users.deleteUser(trx, user.id))) throw new Unauthorized();
  });
}

/**
 * Ends every membership of the user as a removal does (src/members), each recorded as
 * `member.account_deleted` naming only the member; refused while the user owns an organization.
 */
async function endMemberships(trx: Transaction<DB>, audit: AuditContext | null, userId: string, now: Date): Promise<void> {
  for (const membership of await openMembershipsOfUser(trx, userId)) {
    if (!(await removeInTransaction(trx, membership.organizationId, membership.memberId, now))) throw ownerMustTransfer();
    await recordChange(trx, audit, {
      organizationId: membership.organizationId,
      actor: { type: 'member', id: null, memberId: membership.memberId },
      action: 'member.account_deleted',
      target: { type: 'member', id: membership.memberId },
    });
  }
}

/**
 * POST /v1/auth/verify-email/decline ("this wasn't me", docs/people-and-roles.md): the token of a
 * verification message says its mailbox's holder did not sign up, so the account someone made
 * with their address goes — memberships ended, the user row deleted with its sessions, second
 * factors and link tokens — and the address is free again. An account that owns an organization
 * (only possible with EMAIL_VERIFICATION=optional) cannot go that way without the organization's
 * deletion: it is secured instead, as a confirmation from outside its sessions secures it. A
 * proven address is not anyone's to decline (409 `already_verified`).
 */
export async function declineSignUp(deps: AppDeps, token: string): Promise<{ deleted: boolean }> {
  const now = deps.clock.now();
  // As for DELETE /v1/me, the entries name only the member.
  const audit = deps.audit ? { ...deps.audit, ip: null, userAgent: null } : null;
  return deps.db.transaction().execute(async (trx) => {
    const used = await users.consumeAccountToken(trx, 'verify_email', token, now);
    const user = used ? await users.lockUser(trx, used.userId) : undefined;
    if (!user) throw users.invalidToken();
    if (user.email_verified_at) throw new Conflict('already_verified', 'This address was confirmed meanwhile: if that was not you, reset the password of the account.');
    if ((await openMembershipsOfUser(trx, user.id)).some((m) => m.role === 'owner')) {
      await takeOverUnverifiedAccount(trx, deps, user.id, 'declined');
      return { deleted: false };
    }
    await endMemberships(trx, audit, user.id, now);
    if (!(await users.deleteUser(trx, user.id))) throw users.invalidToken();
    return { deleted: true };
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
