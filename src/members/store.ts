import { sql } from 'kysely';
import type { Db } from '../db/schema';
import type { Role } from '../domain/principal';
import type { MemberRow } from './mappers';
import { before, type Position } from '../lib/pagination';

/** An active member with their user's public fields; removed members are never returned. */
function memberQuery(db: Db, organizationId: string) {
  return db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select([
      'm.id',
      'm.organization_id',
      // The user's id through the join: only a removed member's is null.
      'u.id as user_id',
      sql<Role>`m.role`.as('role'),
      'm.created_at',
      'm.suspended_at',
      'u.name as user_name',
      'u.email as user_email',
      'u.image as user_image',
    ])
    .where('m.organization_id', '=', organizationId)
    .where('m.removed_at', 'is', null);
}

/** The page of GET /v1/members, with each member's directory user (at most one: a unique index). */
export async function listMembers(db: Db, organizationId: string, after: Position | null, take: number): Promise<(MemberRow & { directory_user_id: string | null })[]> {
  let query = memberQuery(db, organizationId).select(sql<string | null>`(SELECT d.id FROM directory_users d WHERE d.member_id = m.id)`.as('directory_user_id'));
  if (after) query = query.where(before('m.created_at', 'm.id', after));
  return query.orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(take).execute();
}

export async function findMember(db: Db, organizationId: string, memberId: string): Promise<MemberRow | undefined> {
  return memberQuery(db, organizationId).where('m.id', '=', memberId).executeTakeFirst();
}

/** How many active members the organization has. */
export async function countActiveMembers(db: Db, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom('members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The user's active membership in the organization, if any. */
export async function findMemberIdOfUser(db: Db, organizationId: string, userId: string): Promise<string | undefined> {
  const row = await db.selectFrom('members').select('id').where('organization_id', '=', organizationId).where('user_id', '=', userId).where('removed_at', 'is', null).executeTakeFirst();
  return row?.id;
}

/** Active members of the organization among `memberIds` (to check ids a request names). */
export async function existingMemberIds(db: Db, organizationId: string, memberIds: string[]): Promise<string[]> {
  if (memberIds.length === 0) return [];
  const rows = await db
    .selectFrom('members')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('id', 'in', memberIds)
    .where('removed_at', 'is', null)
    .execute();
  return rows.map((r) => r.id);
}

/** Sets the role of an active, non-owner member; undefined when there is no such member. */
export async function setRole(db: Db, organizationId: string, memberId: string, role: Role): Promise<string | undefined> {
  const row = await db
    .updateTable('members')
    .set({ role })
    .where('organization_id', '=', organizationId)
    .where('id', '=', memberId)
    .where('removed_at', 'is', null)
    .where('role', '<>', 'owner')
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

/** Marks an active, non-owner member removed; undefined when there is no such member. */
export async function markRemoved(db: Db, organizationId: string, memberId: string, now: Date): Promise<string | undefined> {
  const row = await db
    .updateTable('members')
    .set({ removed_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', memberId)
    .where('removed_at', 'is', null)
    .where('role', '<>', 'owner')
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

/** Locks the organization's owner row; undefined when (meanwhile) there is none. */
export async function lockOwner(db: Db, organizationId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('members')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('role', '=', 'owner')
    .where('removed_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
  return row?.id;
}

/** Locks an active member's row; false when there is no such member. */
export async function lockMember(db: Db, organizationId: string, memberId: string): Promise<boolean> {
  const row = await db
    .selectFrom('members')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('id', '=', memberId)
    .where('removed_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
  return row !== undefined;
}

/** Sets any active member's role (ownership transfer; the caller holds both rows' locks). */
export async function setRoleOf(db: Db, organizationId: string, memberId: string, role: Role): Promise<void> {
  await db.updateTable('members').set({ role }).where('organization_id', '=', organizationId).where('id', '=', memberId).where('removed_at', 'is', null).execute();
}

/** What SCIM keeps on a member: its `externalId` and the attributes the service does not model. */
/** A new member; suspended from the start when its directory user is inactive (SCIM). */
export async function insertMember(db: Db, member: { id: string; organizationId: string; userId: string; role: Role; now: Date; suspendedAt?: Date | null }): Promise<void> {
  await db
    .insertInto('members')
    .values({
      id: member.id,
      organization_id: member.organizationId,
      user_id: member.userId,
      role: member.role,
      created_at: member.now,
      removed_at: null,
      suspended_at: member.suspendedAt ?? null,
      updated_at: member.now,
    })
    .execute();
}

/** An active member's suspension (null: active), written by SCIM. */
export async function setSuspendedAt(db: Db, organizationId: string, memberId: string, suspendedAt: Date | null, now: Date): Promise<void> {
  await db
    .updateTable('members')
    .set({ suspended_at: suspendedAt, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', memberId)
    .where('removed_at', 'is', null)
    .execute();
}

/** Moves every member holding `fromKey` (removed ones included) to `toKey` (a role being deleted). */
export async function reassignRole(db: Db, organizationId: string, fromKey: string, toKey: string): Promise<void> {
  await db.updateTable('members').set({ role: toKey }).where('organization_id', '=', organizationId).where('role', '=', fromKey).execute();
}

/** Sets a non-owner member's role, removed or not (an SSO connection's role mapping at sign-in). */
export async function setMappedRole(db: Db, organizationId: string, memberId: string, role: string): Promise<void> {
  await db.updateTable('members').set({ role }).where('organization_id', '=', organizationId).where('id', '=', memberId).where('role', '<>', 'owner').execute();
}

/** The user's active memberships, most recently joined first. */
export async function membershipsOfUser(db: Db, userId: string): Promise<{ id: string; name: string; role: Role; joinedAt: Date }[]> {
  return db
    .selectFrom('members as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select(['o.id', 'o.name', sql<Role>`m.role`.as('role'), 'm.created_at as joinedAt'])
    .where('m.user_id', '=', userId)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .execute();
}

/** Every membership of the user that has not ended (suspended ones included), with its role. */
export async function openMembershipsOfUser(db: Db, userId: string): Promise<{ organizationId: string; memberId: string; role: string }[]> {
  return db
    .selectFrom('members')
    .select(['organization_id as organizationId', 'id as memberId', 'role'])
    .where('user_id', '=', userId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
