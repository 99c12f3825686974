import { positioned } from '../lib/pagination';
import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { Conflict, Forbidden, Unauthorized } from '../lib/errors';
import { hashPassword, sha256Hex } from '../lib/crypto';
import type { PageRequest } from '../lib/pagination';
import { isUniqueViolation } from '../db/errors';
import { createSession, createUser, findUser, findUserByEmail, markEmailVerified, normalizeEmail, setPasswordHash, setSessionOrganization, type Origin } from '../users/service';
import { takeOverUnverifiedAccount } from '../account/takeover';
import { toUser } from '../users/mappers';
import { checkNewPassword } from '../protection/passwords';
import { addMember, findMember } from '../members/memberships';
import { toMember } from '../members/mappers';
import { enforceLimit } from '../plans';
import * as store from './store';
import { changed, recordChange } from '../audit';
import { refuseAcceptOutsideSso, refuseSignUpUnderSso } from '../sso/enforcement';
import * as limits from '../protection/rate-limit';
import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { userIdOf } from '../access/roles';
import { permissionsOfRole } from '../access/role-permissions';
import { alreadyMember, emailTaken, expired, invalidInvitationToken, notFound, notPending } from './service';

/**
 * The invitee's side of an invitation (docs/people-and-roles.md#invitations): previewing it,
 * accepting it with a session or as a new account, and the pending invitations to one's own
 * address. The sender's side (create, resend, list, cancel) is ./service.ts.
 */

/**
 * Whether the invitation's sender may still give what it offers (docs/people-and-roles.md#invitations):
 * an active member (not removed, not suspended) whose current role holds `invitations.manage` and
 * every permission of the invited role, as creating it required. Read inside the accepting
 * transaction, after the claim, with the inviter's row locked.
 */
async function inviterStillMay(trx: Transaction<DB>, organizationId: string, inviterMemberId: string | null, role: string): Promise<boolean> {
  const standing = await store.inviterStanding(trx, organizationId, inviterMemberId, role);
  if (!standing?.invited || standing.invited.key === 'owner') return false;
  const held = permissionsOfRole(standing.inviter);
  if (!held.has('invitations.manage')) return false;
  for (const key of permissionsOfRole(standing.invited)) if (!held.has(key)) return false;
  return true;
}

/** Thrown inside an accepting transaction whose inviter lost the right: the claim rolls back, then the invitation is cancelled. */
class InviterLostTheRight extends Error {}

/**
 * Cancels an invitation whose inviter can no longer give it (after the refused acceptance rolled
 * back its claim), audited as a cancellation by the system, and answers as for any cancelled one.
 */
async function cancelForInviter(deps: AppDeps, organizationId: string, invitationId: string): Promise<never> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    if (await store.cancelPending(trx, organizationId, invitationId, now)) {
      await recordChange(trx, deps.audit ? { ...deps.audit, organizationId } : null, {
        organizationId,
        actor: { type: 'system', id: null, memberId: null },
        action: 'invitation.cancelled',
        target: { type: 'invitation', id: invitationId },
        changes: { ...changed({ status: 'pending' }, { status: 'cancelled' }), reason: { from: null, to: 'inviter_lost_the_right' } },
      });
    }
  });
  throw new Conflict('invitation_not_pending', 'This invitation was cancelled: whoever sent it can no longer invite to this role. Ask the organization for a new one.');
}

/**
 * Accepts by token for the signed-in user. The claim is a conditional UPDATE inside the
 * transaction that also inserts the member, so racing accepts create exactly one membership (the
 * members unique index backs this up for a user who is already a member).
 */
export async function acceptInvitation(deps: AppDeps, principal: Principal, token: string) {
  if (!principal.sessionId) throw new Unauthorized();
  const now = deps.clock.now();
  const user = await findUser(deps.db, userIdOf(principal));
  if (!user) throw new Unauthorized();
  const invitation = await store.findByTokenHash(deps.db, sha256Hex(token));
  if (!invitation) throw notFound();
  if (invitation.email_normalized !== normalizeEmail(user.email)) {
    throw new Forbidden('email_mismatch', 'This invitation was sent to a different e-mail address.');
  }
  if (invitation.status !== 'pending') throw notPending();
  if (invitation.expires_at.getTime() <= now.getTime()) throw expired();
  await refuseAcceptOutsideSso(deps.db, user.email, principal);

  const organizationId = invitation.organization_id;
  const sessionHadNone = principal.membership === null;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const claimed = await store.claimPending(trx, invitation.id, now);
      if (!claimed) throw notPending();
      if (!(await inviterStillMay(trx, organizationId, invitation.invited_by_member_id, claimed.role))) throw new InviterLostTheRight();
      // After the claim (a second accept of the same invitation is 409, not 402); a refusal
      // rolls the claim back, so the invitation stays pending.
      await enforceLimit(trx, deps.settings, organizationId, 'members');
      const memberId = await addMember(trx, { organizationId, userId: user.id, role: claimed.role, now });
      if (sessionHadNone) await setSessionOrganization(trx, principal.sessionId!, organizationId);
      const member = await findMember(trx, organizationId, memberId);
      if (!member) throw new Error('new membership vanished inside its own transaction');
      // The token came through the mailbox of the user's own address (docs/accounts.md#sign-up-and-e-mail-verification).
      const verified = await markEmailVerified(trx, user.id, now);
      await recordChange(trx, deps.audit, {
        organizationId,
        actorMemberId: memberId,
        action: 'invitation.accepted',
        target: { type: 'member', id: memberId },
        changes: { invitationId: { from: null, to: invitation.id }, role: { from: null, to: claimed.role }, ...(verified ? { emailVerified: { from: false, to: true } } : {}) },
      });
      return toMember(member);
    });
  } catch (err) {
    if (err instanceof InviterLostTheRight) return cancelForInviter(deps, organizationId, invitation.id);
    if (isUniqueViolation(err, 'members_active_user_key')) throw alreadyMember();
    throw err;
  }
}

/**
 * POST /v1/invitations/accept without a session (docs/people-and-roles.md#invitations): the token proves the
 * mailbox, so the account it creates for the invitation's address is verified, and it joins the
 * organization with a session (`authMethod: 'invitation'`) in one transaction. A verified account
 * of that address already exists: 409 `email_taken` (sign in and accept with a session). An
 * unverified one is taken over (docs/accounts.md#linking-accounts-safely): whatever was set on it before is untrusted.
 */
export async function acceptAsNewAccount(deps: AppDeps, input: { token: string; name: string; password: string }, origin: Origin) {
  await limits.consume(deps, 'invitationAcceptIp', origin.ip);
  const now = deps.clock.now();
  const invitation = await store.findByTokenHash(deps.db, sha256Hex(input.token));
  if (!invitation) throw notFound();
  if (invitation.status !== 'pending') throw notPending();
  if (invitation.expires_at.getTime() <= now.getTime()) throw expired();
  await checkNewPassword(input.password, { email: invitation.email, name: input.name });
  // An address in a verified domain of an organization that enforces SSO gets no password account.
  await refuseSignUpUnderSso(deps.db, invitation.email);
  const passwordHash = await hashPassword(input.password, deps.settings.passwordHashCost);
  const organizationId = invitation.organization_id;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const claimed = await store.claimPending(trx, invitation.id, now);
      if (!claimed) throw notPending();
      if (!(await inviterStillMay(trx, organizationId, invitation.invited_by_member_id, claimed.role))) throw new InviterLostTheRight();
      await enforceLimit(trx, deps.settings, organizationId, 'members');
      const user = await accountFor(trx, deps, { email: invitation.email, name: input.name, passwordHash, organizationId, now });
      const memberId = await addMember(trx, { organizationId, userId: user.id, role: claimed.role, now });
      const member = await findMember(trx, organizationId, memberId);
      if (!member) throw new Error('new membership vanished inside its own transaction');
      await recordChange(trx, deps.audit, {
        organizationId,
        actor: { type: 'member', id: user.id, memberId },
        action: 'invitation.accepted',
        target: { type: 'member', id: memberId },
        changes: { invitationId: { from: null, to: invitation.id }, role: { from: null, to: claimed.role } },
      });
      const session = await createSession(trx, deps, { userId: user.id, authMethod: 'invitation', ip: origin.ip, userAgent: origin.userAgent, activeOrganizationId: organizationId }, now);
      return { user: toUser(user), member: toMember(member), session };
    });
  } catch (err) {
    if (err instanceof InviterLostTheRight) return cancelForInviter(deps, organizationId, invitation.id);
    if (isUniqueViolation(err, 'users_email_normalized_key') || isUniqueViolation(err, 'members_active_user_key')) throw emailTaken();
    throw err;
  }
}

/**
 * The account an invitation accepted without a session lands in (the token proves the mailbox):
 * a new, verified one for the invitation's address; an unverified account of that address is taken
 * over (docs/accounts.md#linking-accounts-safely: its password, sessions and API keys were set by someone nobody
 * proved, so they go) and gets this password; a verified one is 409 `email_taken` (its owner
 * signs in and accepts with a session).
 */
async function accountFor(trx: Transaction<DB>, deps: AppDeps, input: { email: string; name: string; passwordHash: string; organizationId: string; now: Date }) {
  const existing = await findUserByEmail(trx, input.email);
  if (!existing) return createUser(trx, { email: input.email, name: input.name, passwordHash: input.passwordHash, emailVerified: true, now: input.now });
  if (existing.email_verified_at) throw emailTaken();
  // Null when a concurrent proof verified it first: then it is someone's proven account.
  if (!(await takeOverUnverifiedAccount(trx, deps, existing.id, 'invitation', input.organizationId))) throw emailTaken();
  await setPasswordHash(trx, existing.id, input.passwordHash, input.now);
  return (await findUser(trx, existing.id))!;
}

/**
 * What an invitation link offers, for the page it opens (public: the token is the only
 * credential). One answer, 400 `invalid_token`, for a token unknown, used, cancelled or expired.
 */
export async function previewInvitation(deps: AppDeps, token: string, ip: string) {
  await limits.consume(deps, 'invitationAcceptIp', ip);
  const invitation = await store.findByTokenHash(deps.db, sha256Hex(token));
  if (!invitation || invitation.status !== 'pending' || invitation.expires_at.getTime() <= deps.clock.now().getTime()) throw invalidInvitationToken();
  const context = await store.invitationContext(deps.db, invitation.organization_id, invitation.invited_by_member_id);
  return {
    organization: { name: context.organization_name },
    inviter: { name: context.inviter_name },
    email: invitation.email,
    role: invitation.role,
    expiresAt: invitation.expires_at.toISOString(),
  };
}

/** GET /v1/me/invitations: pending invitations to the signed-in user's (verified) address. */
export async function listMyInvitations(deps: AppDeps, principal: Principal, page: PageRequest) {
  const user = await findUser(deps.db, userIdOf(principal));
  if (!user) throw new Unauthorized();
  // With EMAIL_VERIFICATION=required the session gate already refuses; with `optional` too: an
  // address nobody proved learns nothing about who invites it.
  if (!user.email_verified_at) throw new Forbidden('email_not_verified', 'Confirm your e-mail address first: open the link in the message sent to it.');
  const now = deps.clock.now();
  const email = normalizeEmail(user.email);
  return deps.cursors.page(
    `my-invitations:${userIdOf(principal)}`,
    page,
    async (after, take) => positioned(await store.listPendingForEmail(deps.db, email, now, after, take)),
    (row) => ({
      id: row.id,
      organization: { id: row.organization_id, name: row.organization_name },
      inviter: { name: row.inviter_name },
      email: row.email,
      role: row.role,
      expiresAt: row.expires_at.toISOString(),
      createdAt: row.created_at.toISOString(),
    }),
  );
}

