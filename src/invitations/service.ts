import { positioned } from '../lib/pagination';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, Role } from '../domain/principal';
import { CodedError, Conflict, Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import type { PageRequest } from '../lib/pagination';
import { isForeignKeyViolation, isUniqueViolation } from '../db/errors';
import { requireAssignable } from '../roles/service';
import { normalizeEmail } from '../users/service';
import * as store from './store';
import type { InvitationRow } from './store';
import { changed, created, recordChange, writeWithAudit, type Change } from '../audit';
import { mailCtes, prepareMail, queueMail } from '../mail/queue';
import { recipientBudget } from '../mail/budget';
import type { MailInput } from '../mail/templates';
import * as limits from '../protection/rate-limit';
import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';

type Invitation = components['schemas']['Invitation'];

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
const TOKEN_PREFIX = 'cpi';

export const notFound = () => new NotFound('invitation_not_found', 'The invitation could not be found.');
export const notPending = () => new Conflict('invitation_not_pending', 'The invitation has already been accepted or cancelled.');
export const invalidInvitationToken = () => new CodedError(400, 'invalid_token', 'This invitation link is invalid, already used or expired. Ask for a new one.');
export const emailTaken = () => new Conflict('email_taken', 'An account with this e-mail already exists: sign in, then accept the invitation.');
export const expired = () => new CodedError(410, 'invitation_expired', 'The invitation has expired.');
export const alreadyMember = () => new Conflict('already_member', 'That person is already a member of the organization.');

export function toInvitation(row: InvitationRow, now: Date): Invitation {
  const expired = row.status === 'pending' && row.expires_at.getTime() <= now.getTime();
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    status: expired ? 'expired' : row.status,
    expiresAt: row.expires_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    invitedByMemberId: row.invited_by_member_id,
    acceptedAt: row.accepted_at?.toISOString() ?? null,
    cancelledAt: row.cancelled_at?.toISOString() ?? null,
    delivery: row.delivery_status
      ? { status: row.delivery_status, lastAttemptAt: row.delivery_last_attempt_at?.toISOString() ?? null, lastError: row.delivery_last_error }
      : null,
  };
}

/** The invitation message (a new token inside): what it says, given the organization's and inviter's names. */
function invitationMail(context: { organization_name: string; inviter_name: string | null }, invitation: { email: string; role: string; token: string; expiresAt: Date }): Extract<MailInput, { kind: 'invitation' }> {
  return {
    kind: 'invitation',
    to: invitation.email,
    organizationName: context.organization_name,
    inviterName: context.inviter_name,
    role: invitation.role,
    token: invitation.token,
    expiresAt: invitation.expiresAt,
  };
}

/** Queues the invitation message in the caller's transaction; returns the message id. */
async function mailInvitation(trx: Transaction<DB>, deps: AppDeps, invitation: { organizationId: string; inviterMemberId: string | null; email: string; role: string; token: string; expiresAt: Date }) {
  return queueMail(trx, deps, invitationMail(await store.invitationContext(trx, invitation.organizationId, invitation.inviterMemberId), invitation));
}

/**
 * Two round trips after the session check: one read (the role, whether the address is a member's,
 * the names the message shows) and one statement that writes the rest, atomic by itself: expired
 * pending invitations of the address cancelled, the message queued, the invitation, and its audit
 * entry and event, the entry last (it takes the organization's chain-head lock, held to commit).
 * The member check is a read before the write, as it was inside a READ COMMITTED transaction: a
 * membership committed between the two is not seen either way.
 */
export async function createInvitation(deps: AppDeps, membership: Membership, input: { email: string; role: Role }) {
  const { organizationId } = membership;
  const email = input.email.trim();
  const emailNormalized = normalizeEmail(email);
  const checked = await store.invitationPrecheck(deps.db, organizationId, membership.memberId, input.role, emailNormalized);
  if (!checked) throw new NotFound('organization_not_found', 'The organization could not be found.');
  const role = requireAssignable(membership, input.role, checked.role, ['body', 'role']);
  if (checked.already_member) throw alreadyMember();
  // Each invitation mails an address the caller chose: limited per organization and, with every
  // other message, per recipient (docs/mail.md#how-much-one-address-gets). Spent before the one
  // statement that writes it (a refused write keeps what it spent), both in one statement.
  await limits.consumeAll(deps, [['invitationOrg', organizationId], recipientBudget(email)]);
  const token = randomSecret(TOKEN_PREFIX);
  const now = deps.clock.now();
  const invitation: store.NewInvitation = {
    id: newId('invitation'),
    organizationId,
    email,
    emailNormalized,
    role,
    tokenHash: sha256Hex(token),
    invitedByMemberId: membership.memberId,
    now,
    expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
  };
  // The message commits with the invitation, or neither does (docs/mail.md#queueing-and-sending). The
  // token leaves only in it (docs/people-and-roles.md#invitations), never in the reply.
  const message = mailCtes(prepareMail(deps, invitationMail(checked, { email, role, token, expiresAt: invitation.expiresAt })));
  const change: Change = { action: 'invitation.created', target: { type: 'invitation', id: invitation.id }, changes: created({ email, role: input.role }) };
  try {
    await writeWithAudit(
      deps.audit,
      change,
      'invitation',
      (audit) => store.insertInvitationWithMessage(deps.db, invitation, message, audit),
      () =>
        deps.db.transaction().execute(async (trx) => {
          await store.insertInvitationWithMessage(trx, invitation, message);
          await recordChange(trx, deps.audit, change);
        }),
    );
  } catch (err) {
    if (isUniqueViolation(err, 'invitations_pending_email_key')) {
      throw new Conflict('invitation_pending', 'A pending invitation for this e-mail already exists.');
    }
    // The role was deleted between the check and the insert.
    if (isForeignKeyViolation(err, 'invitations_role_fkey')) throw Invalid.at(['body', 'role'], `the organization has no role ${role}`);
    throw err;
  }
  // What was just written, with its message as queued (no re-read).
  return toInvitation(
    { id: invitation.id, organization_id: organizationId, email, role, status: 'pending', invited_by_member_id: membership.memberId, created_at: now, expires_at: invitation.expiresAt, accepted_at: null, cancelled_at: null, delivery_status: 'pending', delivery_last_attempt_at: null, delivery_last_error: null },
    now,
  );
}

/**
 * Mails a pending invitation again (docs/people-and-roles.md#invitations): a new token (the old one dies with its
 * hash), a new message in the same transaction, the expiry renewed. Rate limited per invitation.
 */
export async function resendInvitation(deps: AppDeps, membership: Membership, invitationId: string) {
  const { organizationId } = membership;
  const current = await store.findInvitation(deps.db, organizationId, invitationId);
  if (!current) throw notFound();
  if (current.status !== 'pending') throw notPending();
  // Counted only for an invitation of the caller's organization: another tenant cannot use it up.
  await limits.consume(deps, 'invitationResend', invitationId);
  await limits.consume(deps, 'invitationOrg', organizationId);
  const token = randomSecret(TOKEN_PREFIX);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + INVITATION_TTL_MS);
  return deps.db.transaction().execute(async (trx) => {
    const mailMessageId = await mailInvitation(trx, deps, { organizationId, inviterMemberId: current.invited_by_member_id, email: current.email, role: current.role, token, expiresAt });
    // Accepted or cancelled meanwhile: the message rolls back with this.
    const renewed = await store.renewPending(trx, organizationId, invitationId, { tokenHash: sha256Hex(token), expiresAt, mailMessageId });
    if (!renewed) throw notPending();
    await recordChange(trx, deps.audit, {
      action: 'invitation.resent',
      target: { type: 'invitation', id: invitationId },
      changes: changed({ expiresAt: renewed.previous_expires_at.toISOString() }, { expiresAt: expiresAt.toISOString() }),
    });
    return toInvitation((await store.findInvitation(trx, organizationId, invitationId))!, now);
  });
}

export async function listInvitations(deps: AppDeps, membership: Membership, page: PageRequest) {
  const now = deps.clock.now();
  return deps.cursors.page(
    'invitations',
    page,
    async (after, take) => positioned(await store.listInvitations(deps.db, membership.organizationId, after, take)),
    (row) => toInvitation(row, now),
  );
}

export async function cancelInvitation(deps: AppDeps, membership: Membership, invitationId: string) {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    if (await store.cancelPending(trx, membership.organizationId, invitationId, now)) {
      await recordChange(trx, deps.audit, { action: 'invitation.cancelled', target: { type: 'invitation', id: invitationId }, changes: changed({ status: 'pending' }, { status: 'cancelled' }) });
      return toInvitation((await store.findInvitation(trx, membership.organizationId, invitationId))!, now);
    }
    if (await store.findInvitation(trx, membership.organizationId, invitationId)) throw notPending();
    throw notFound();
  });
}

/** Pending (unexpired) invitations of the organization (telemetry's seat summary). */
export { countPendingInvitations } from './store';
