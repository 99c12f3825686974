import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

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
}

/** Never the token hash: it only ever appears in a WHERE clause. */
const COLUMNS = [
  'id',
  'organization_id',
  'email',
  'role',
  'status',
  'invited_by_member_id',
  'created_at',
  'expires_at',
  'accepted_at',
  'cancelled_at',
] as const;

export async function insertInvitation(
  db: Db,
  invitation: { id: string; organizationId: string; email: string; emailNormalized: string; role: string; tokenHash: string; invitedByMemberId: string; now: Date; expiresAt: Date },
): Promise<InvitationRow> {
  return db
    .insertInto('invitations')
    .values({
      id: invitation.id,
      organization_id: invitation.organizationId,
      email: invitation.email,
      email_normalized: invitation.emailNormalized,
      role: invitation.role,
      token_hash: invitation.tokenHash,
      status: 'pending',
      invited_by_member_id: invitation.invitedByMemberId,
      created_at: invitation.now,
      expires_at: invitation.expiresAt,
      accepted_at: null,
      cancelled_at: null,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

/** Whether a user with this (normalized) e-mail is an active member of the organization. */
export async function isMemberByEmail(db: Db, organizationId: string, emailNormalized: string): Promise<boolean> {
  const row = await db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select('m.id')
    .where('m.organization_id', '=', organizationId)
    .where('m.removed_at', 'is', null)
    .where('u.email_normalized', '=', emailNormalized)
    .executeTakeFirst();
  return row !== undefined;
}

/** An expired pending invitation no longer blocks a new one for the same e-mail. */
export async function cancelExpiredPending(db: Db, organizationId: string, emailNormalized: string, now: Date): Promise<void> {
  await db
    .updateTable('invitations')
    .set({ status: 'cancelled', cancelled_at: now })
    .where('organization_id', '=', organizationId)
    .where('email_normalized', '=', emailNormalized)
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .execute();
}

export async function listInvitations(db: Db, organizationId: string, after: Position | null, take: number): Promise<InvitationRow[]> {
  let query = db.selectFrom('invitations').select(COLUMNS).where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
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
  return db.selectFrom('invitations').select(COLUMNS).where('organization_id', '=', organizationId).where('id', '=', invitationId).executeTakeFirst();
}

/** Cancels a pending invitation; undefined when it is not (or no longer) pending. */
export async function cancelPending(db: Db, organizationId: string, invitationId: string, now: Date): Promise<InvitationRow | undefined> {
  return db
    .updateTable('invitations')
    .set({ status: 'cancelled', cancelled_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', invitationId)
    .where('status', '=', 'pending')
    .returning(COLUMNS)
    .executeTakeFirst();
}

/** The token is the only scope of an accept: it identifies the invitation and its organization. */
export async function findByTokenHash(db: Db, tokenHash: string): Promise<(InvitationRow & { email_normalized: string }) | undefined> {
  return db.selectFrom('invitations').select([...COLUMNS, 'email_normalized']).where('token_hash', '=', tokenHash).executeTakeFirst();
}

/**
 * Claims a pending, unexpired invitation. The row lock makes concurrent accepts queue; the one
 * that comes second re-reads `status` after the first commits and gets nothing back.
 */
export async function claimPending(db: Db, invitationId: string, now: Date): Promise<InvitationRow | undefined> {
  return db
    .updateTable('invitations')
    .set({ status: 'accepted', accepted_at: now })
    .where('id', '=', invitationId)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .returning(COLUMNS)
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
