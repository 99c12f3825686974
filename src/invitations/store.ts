import { sql, type RawBuilder } from 'kysely';
import type { AuditCtes } from '../audit';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';
import { before, type Position } from '../lib/pagination';
import type { MailStatus } from '../mail/tables';

export interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  role: string;
  status: 'pending' | 'accepted' | 'cancelled';
  invited_by_member_id: string | null;
  created_at: Date;
  expires_at: Date;
  accepted_at: Date | null;
  cancelled_at: Date | null;
  /** The latest message's record (mail_messages, joined): null when the invitation has none. */
  delivery_status: MailStatus | null;
  delivery_last_attempt_at: Date | null;
  delivery_last_error: string | null;
}

/** Never the token hash: it only ever appears in a WHERE clause. */
const COLUMNS = [
  'i.id',
  'i.organization_id',
  'i.email',
  'i.role',
  'i.status',
  'i.invited_by_member_id',
  'i.created_at',
  'i.expires_at',
  'i.accepted_at',
  'i.cancelled_at',
  'mm.status as delivery_status',
  'mm.last_attempt_at as delivery_last_attempt_at',
  'mm.last_error as delivery_last_error',
] as const;

/** Invitations with their latest message's delivery record (the mail area's row, read in a join). */
function invitations(db: Db) {
  return db.selectFrom('invitations as i').leftJoin('mail_messages as mm', 'mm.id', 'i.mail_message_id').select(COLUMNS);
}

export interface NewInvitation {
  id: string;
  organizationId: string;
  email: string;
  emailNormalized: string;
  role: string;
  tokenHash: string;
  invitedByMemberId: string;
  now: Date;
  expiresAt: Date;
}

/** What creating an invitation checks and its message says, read in one round trip before the write. */
export interface InvitationPrecheck {
  organization_name: string;
  inviter_name: string | null;
  /** The organization's role of the asked key (undefined: it has none). */
  role: { key: string; built_in: boolean; permissions: string[] } | undefined;
  /** A user with the address is an active member already. */
  already_member: boolean;
}

/**
 * The organization's and the inviter's names (as `invitationContext`), the asked role, and whether
 * the address is an active member's, in one statement; undefined when there is no such organization.
 */
export async function invitationPrecheck(db: Db, organizationId: string, inviterMemberId: string, roleKey: string, emailNormalized: string): Promise<InvitationPrecheck | undefined> {
  const { rows } = await sql<{ organization_name: string; inviter_name: string | null; role_key: string | null; role_built_in: boolean | null; role_permissions: string[] | null; already_member: boolean }>`
    ${preparedAs('invitation_precheck')}
    SELECT o.name AS organization_name,
      (SELECT coalesce(u.name, u.email) FROM members m JOIN users u ON u.id = m.user_id WHERE m.organization_id = o.id AND m.id = ${inviterMemberId}) AS inviter_name,
      r.key AS role_key, r.built_in AS role_built_in, r.permissions AS role_permissions,
      EXISTS (SELECT 1 FROM members m JOIN users u ON u.id = m.user_id
        WHERE m.organization_id = o.id AND m.removed_at IS NULL AND u.email_normalized = ${emailNormalized}) AS already_member
    FROM organizations o
    LEFT JOIN organization_roles r ON r.organization_id = o.id AND r.key = ${roleKey}
    WHERE o.id = ${organizationId}`.execute(db);
  const row = rows[0];
  if (!row) return undefined;
  return {
    organization_name: row.organization_name,
    inviter_name: row.inviter_name,
    role: row.role_key === null ? undefined : { key: row.role_key, built_in: row.role_built_in === true, permissions: row.role_permissions ?? [] },
    already_member: row.already_member,
  };
}

/**
 * A new invitation with its queued message, in ONE statement (atomic by itself, one round trip):
 * the address's expired pending invitations cancelled first (they no longer block it), the message
 * (`mail`: `mailCtes` of src/mail/queue.ts, defining `mail_queued` and `mail_announced`) and the
 * invitation naming it. `audit`: the change's audit entry and event as
 * CTEs (`writeWithAudit` of src/audit), written by the same statement
 * after the rest, so the organization's chain-head lock is taken by its last step.
 */
export async function insertInvitationWithMessage(db: Db, invitation: NewInvitation, mail: RawBuilder<unknown>, audit?: AuditCtes): Promise<void> {
  const i = invitation;
  await sql`${preparedAs(`invitation_create${audit?.suffix ?? ''}`)}
    WITH cancelled AS (
      UPDATE invitations SET status = 'cancelled', cancelled_at = ${i.now}::timestamptz
      WHERE organization_id = ${i.organizationId} AND email_normalized = ${i.emailNormalized} AND status = 'pending' AND expires_at <= ${i.now}::timestamptz
      RETURNING id
    ), ${mail}, invitation AS (
      INSERT INTO invitations (id, organization_id, email, email_normalized, role, token_hash, status, invited_by_member_id, created_at, expires_at, accepted_at, cancelled_at, mail_message_id)
      SELECT ${i.id}, ${i.organizationId}, ${i.email}, ${i.emailNormalized}, ${i.role}, ${i.tokenHash}, 'pending', ${i.invitedByMemberId},
        ${i.now}::timestamptz, ${i.expiresAt}::timestamptz, NULL::timestamptz, NULL::timestamptz, q.id
      -- Reading the cancellation's count makes it run first: the unique index of pending addresses then no longer holds the expired one.
      FROM mail_queued q, (SELECT count(*) FROM cancelled) AS c
      RETURNING id
    )${audit ? sql`, ${audit.ctes}` : sql``}
    SELECT (SELECT count(*) FROM invitation) AS written, (SELECT count(*) FROM mail_announced) AS announced`.execute(db);
}

export async function listInvitations(db: Db, organizationId: string, after: Position | null, take: number): Promise<InvitationRow[]> {
  let query = invitations(db).where('i.organization_id', '=', organizationId);
  if (after) query = query.where(before('i.created_at', 'i.id', after));
  return query.orderBy('i.created_at', 'desc').orderBy('i.id', 'desc').limit(take).execute();
}

/** Invitations that can still be accepted (pending and not expired at `now`). */
export async function countPendingInvitations(db: Db, organizationId: string, now: Date): Promise<number> {
  const row = await db
    .selectFrom('invitations')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function findInvitation(db: Db, organizationId: string, invitationId: string): Promise<InvitationRow | undefined> {
  return invitations(db).where('i.organization_id', '=', organizationId).where('i.id', '=', invitationId).executeTakeFirst();
}

/** Cancels a pending invitation; false when it is not (or no longer) pending. */
export async function cancelPending(db: Db, organizationId: string, invitationId: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('invitations')
    .set({ status: 'cancelled', cancelled_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', invitationId)
    .where('status', '=', 'pending')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * A resend: the pending invitation gets a new token hash (the old token stops working), a new
 * expiry and its new message. Returns the previous expiry, or undefined when it is not pending.
 */
export async function renewPending(
  db: Db,
  organizationId: string,
  invitationId: string,
  renewal: { tokenHash: string; expiresAt: Date; mailMessageId: string },
): Promise<{ previous_expires_at: Date } | undefined> {
  return db
    .updateTable('invitations as i')
    .from('invitations as prev')
    .set({ token_hash: renewal.tokenHash, expires_at: renewal.expiresAt, mail_message_id: renewal.mailMessageId })
    .whereRef('prev.id', '=', 'i.id')
    .where('i.organization_id', '=', organizationId)
    .where('i.id', '=', invitationId)
    .where('i.status', '=', 'pending')
    .returning('prev.expires_at as previous_expires_at')
    .executeTakeFirst();
}

/** The token is the only scope of an accept: it identifies the invitation and its organization. */
export async function findByTokenHash(db: Db, tokenHash: string): Promise<(InvitationRow & { email_normalized: string }) | undefined> {
  return invitations(db).select('i.email_normalized').where('i.token_hash', '=', tokenHash).executeTakeFirst();
}

/**
 * Claims a pending, unexpired invitation. The row lock makes concurrent accepts queue; the one
 * that comes second re-reads `status` after the first commits and gets nothing back.
 */
export async function claimPending(db: Db, invitationId: string, now: Date): Promise<{ role: string } | undefined> {
  return db
    .updateTable('invitations')
    .set({ status: 'accepted', accepted_at: now })
    .where('id', '=', invitationId)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .returning('role')
    .executeTakeFirst();
}

/** Invitations of any status naming a role being deleted name `toKey` instead. */
export async function reassignRole(db: Db, organizationId: string, fromKey: string, toKey: string): Promise<void> {
  await db.updateTable('invitations').set({ role: toKey }).where('organization_id', '=', organizationId).where('role', '=', fromKey).execute();
}

/** What the invitation message says: the organization's name and the inviter's (their name, else e-mail). */
export async function invitationContext(db: Db, organizationId: string, inviterMemberId: string | null): Promise<{ organization_name: string; inviter_name: string | null }> {
  const row = await db
    .selectFrom('organizations as o')
    .leftJoin('members as m', (join) => join.onRef('m.organization_id', '=', 'o.id').on('m.id', '=', inviterMemberId ?? ''))
    .leftJoin('users as u', 'u.id', 'm.user_id')
    .select(['o.name as organization_name', (eb) => eb.fn.coalesce('u.name', 'u.email').as('inviter_name')])
    .where('o.id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return row;
}

export interface MyInvitationRow {
  id: string;
  email: string;
  role: string;
  expires_at: Date;
  created_at: Date;
  organization_id: string;
  organization_name: string;
  inviter_name: string | null;
}

/** Pending, unexpired invitations to an address, in every organization (the invitee's own list). */
export async function listPendingForEmail(db: Db, emailNormalized: string, now: Date, after: Position | null, take: number): Promise<MyInvitationRow[]> {
  let query = db
    .selectFrom('invitations as i')
    .innerJoin('organizations as o', 'o.id', 'i.organization_id')
    .leftJoin('members as m', 'm.id', 'i.invited_by_member_id')
    .leftJoin('users as u', 'u.id', 'm.user_id')
    .select(['i.id', 'i.email', 'i.role', 'i.expires_at', 'i.created_at', 'o.id as organization_id', 'o.name as organization_name', (eb) => eb.fn.coalesce('u.name', 'u.email').as('inviter_name')])
    .where('i.email_normalized', '=', emailNormalized)
    .where('i.status', '=', 'pending')
    .where('i.expires_at', '>', now);
  if (after) query = query.where(before('i.created_at', 'i.id', after));
  return query.orderBy('i.created_at', 'desc').orderBy('i.id', 'desc').limit(take).execute();
}

/**
 * What an invitation's inviter may do now, read at acceptance inside its transaction (the member
 * row locked against a concurrent removal or role change): the permissions of their current role
 * and those of the role invited to. Undefined: the inviter is no longer an active member (removed,
 * suspended, or their row gone).
 */
export async function inviterStanding(
  db: Db,
  organizationId: string,
  inviterMemberId: string | null,
  invitedRole: string,
): Promise<{ inviter: { key: string; builtIn: boolean; permissions: string[] | null }; invited: { key: string; builtIn: boolean; permissions: string[] | null } | null } | undefined> {
  if (!inviterMemberId) return undefined;
  const { rows } = await sql<{ role: string; built_in: boolean | null; permissions: string[] | null; invited_built_in: boolean | null; invited_permissions: string[] | null; invited_key: string | null }>`
    ${preparedAs('invitation_inviter_standing')}
    SELECT m.role, r.built_in, r.permissions, ir.key AS invited_key, ir.built_in AS invited_built_in, ir.permissions AS invited_permissions
    FROM members m
    LEFT JOIN organization_roles r ON r.organization_id = m.organization_id AND r.key = m.role
    LEFT JOIN organization_roles ir ON ir.organization_id = m.organization_id AND ir.key = ${invitedRole}
    WHERE m.organization_id = ${organizationId} AND m.id = ${inviterMemberId} AND m.removed_at IS NULL AND m.suspended_at IS NULL
    FOR SHARE OF m`.execute(db);
  const row = rows[0];
  if (!row) return undefined;
  return {
    inviter: { key: row.role, builtIn: row.built_in === true, permissions: row.permissions },
    invited: row.invited_key === null ? null : { key: row.invited_key, builtIn: row.invited_built_in === true, permissions: row.invited_permissions },
  };
}
