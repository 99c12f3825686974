import { sql } from 'kysely';
import type { Db, MemberType } from '../db/schema';
import { sizeInText } from '../db/connect';
import { jsonPageOf, jsonPageSelect, type JsonPage } from '../db/json-page';
import type { Role } from '../domain/principal';
import type { MemberRow } from './mappers';
import { before, type Position } from '../lib/pagination';
import type { SessionPreload } from '../principal/session';
import { memberColumnsOf, memberJson } from './member-json';

/**
 * An active member with their user's public fields, or its service account's (a member with no
 * user); removed members are never returned.
 */
function memberQuery(db: Db, organizationId: string) {
  return db
    .selectFrom('members as m')
    .leftJoin('users as u', 'u.id', 'm.user_id')
    .leftJoin('service_accounts as sa', 'sa.member_id', 'm.id')
    .select([
      'm.id',
      'm.organization_id',
      'm.type',
      // The user's id through the join: null for a service account (and a removed person).
      'u.id as user_id',
      sql<Role>`m.role`.as('role'),
      'm.created_at',
      'm.suspended_at',
      'u.name as user_name',
      'u.email as user_email',
      'u.image as user_image',
      'sa.id as service_account_id',
      'sa.name as service_account_name',
      'sa.disabled_at as service_account_disabled_at',
    ])
    .where('m.organization_id', '=', organizationId)
    .where('m.removed_at', 'is', null);
}

/** A member as GET /v1/members lists it: with its directory user (at most one: a unique index). */
export type ListedMemberRow = MemberRow & { directory_user_id: string | null };

/** The page of GET /v1/members. */
export async function listMembers(db: Db, organizationId: string, after: Position | null, take: number): Promise<ListedMemberRow[]> {
  let query = memberQuery(db, organizationId).select(sql<string | null>`(SELECT d.id FROM directory_users d WHERE d.member_id = m.id)`.as('directory_user_id'));
  if (after) query = query.where(before('m.created_at', 'm.id', after));
  return query.orderBy('m.created_at', 'desc').orderBy('m.id', 'desc').limit(take).execute();
}

export async function findMember(db: Db, organizationId: string, memberId: string): Promise<MemberRow | undefined> {
  return memberQuery(db, organizationId).where('m.id', '=', memberId).executeTakeFirst();
}

/** How many active members of a type the organization has. */
async function countActive(db: Db, organizationId: string, type: MemberType): Promise<number> {
  const row = await db
    .selectFrom('members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .where('type', '=', type)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** How many people are active members (the seats: service accounts take none). */
export async function countActiveMembers(db: Db, organizationId: string): Promise<number> {
  return countActive(db, organizationId, 'user');
}

/** How many service accounts the organization has (their members are active until deleted). */
export async function countServiceAccounts(db: Db, organizationId: string): Promise<number> {
  return countActive(db, organizationId, 'service_account');
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

/** Locks an active member's row; its type, undefined when there is no such member. */
export async function lockMember(db: Db, organizationId: string, memberId: string): Promise<MemberType | undefined> {
  const row = await db
    .selectFrom('members')
    .select('type')
    .where('organization_id', '=', organizationId)
    .where('id', '=', memberId)
    .where('removed_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
  return row?.type;
}

/** Sets any active member's role (ownership transfer; the caller holds both rows' locks). */
export async function setRoleOf(db: Db, organizationId: string, memberId: string, role: Role): Promise<void> {
  await db.updateTable('members').set({ role }).where('organization_id', '=', organizationId).where('id', '=', memberId).where('removed_at', 'is', null).execute();
}

/**
 * A new member: a person (`userId`; suspended from the start when its directory user is inactive,
 * SCIM) or a service account (no user). `type` defaults to a person.
 */
export async function insertMember(
  db: Db,
  member: { id: string; organizationId: string; userId: string | null; type?: MemberType; role: Role; now: Date; suspendedAt?: Date | null },
): Promise<void> {
  await db
    .insertInto('members')
    .values({
      id: member.id,
      organization_id: member.organizationId,
      user_id: member.userId,
      type: member.type ?? 'user',
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

/** The user's active memberships (not suspended), each organization with the user's member there: membershipsOfUser's order. */
export async function activeMembersOfUser(db: Db, userId: string): Promise<{ organizationId: string; memberId: string }[]> {
  return db
    .selectFrom('members as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select(['m.organization_id as organizationId', 'm.id as memberId'])
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

/** The page's items as the contract's `Member` (constant SQL text, built once). */
const PAGE_MEMBER_JSON = sql.raw(memberJson(memberColumnsOf('p')));

/** A first page of GET /v1/members read by the session check (`membersPagePreload`). */
export interface PreloadedMembersPage extends JsonPage {
  /** The page size it was read for. */
  limit: number;
}

/**
 * A page of `limit` active members, newest first (the first one, or the one after `after`: the
 * same index range scan at any depth), read by the session query itself for member `m`
 * (src/principal/session.ts), so GET /v1/members is one round trip whatever page it asks for. One
 * row more is read to learn whether another page follows. The items are JSON text sent as it is
 * (src/lib/json-text.ts): this SQL is their mapper, the same fields as listMembers' rows through
 * toMember plus `directoryUserId`, `createdAt` as Date#toISOString writes it (milliseconds, as a
 * JS Date holds them).
 */
export function membersPagePreload(limit: number, after: Position | null): SessionPreload<PreloadedMembersPage> {
  return {
    // Texts with and without the keyset condition, per page size: each its own prepared statement.
    name: `${after ? 'members_page_after' : 'members_page'}_${limit}`,
    columns: sql`mp.items_json AS members_page_json, mp.last_created_at AS members_page_last_created_at, mp.last_id AS members_page_last_id`,
    joins: sql`LEFT JOIN LATERAL (${jsonPageSelect(
      PAGE_MEMBER_JSON,
      sql`SELECT pm.id, pm.organization_id, pm.type, pu.id AS user_id, pm.role, pm.suspended_at, pm.created_at, pu.name AS user_name, pu.email AS user_email, pu.image AS user_image,
          psa.id AS service_account_id, psa.name AS service_account_name, psa.disabled_at AS service_account_disabled_at,
          (SELECT d.id FROM directory_users d WHERE d.member_id = pm.id) AS directory_user_id,
          row_number() OVER (ORDER BY pm.created_at DESC, pm.id DESC) AS n
        FROM members pm LEFT JOIN users pu ON pu.id = pm.user_id LEFT JOIN service_accounts psa ON psa.member_id = pm.id
        WHERE pm.organization_id = m.organization_id AND pm.removed_at IS NULL
          ${after ? sql`AND ${before('pm.created_at', 'pm.id', after)}` : sql``}
        ORDER BY pm.created_at DESC, pm.id DESC
        LIMIT ${sizeInText(limit + 1)}`,
      limit,
    )}) mp ON true`,
    read: (row) => {
      const itemsJson = row.members_page_json as string | null;
      if (row.principal_member_id === null || itemsJson === null) return undefined;
      return { limit, ...jsonPageOf(itemsJson, row.members_page_last_created_at as Date | null, row.members_page_last_id as string | null) };
    },
  };
}
