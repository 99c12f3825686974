import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import type { JsonObject } from './attributes';
import type { LinkReason } from './tables';

/** A directory user with what SCIM shows of its member (null columns when it has none). */
export interface DirectoryUserRow {
  id: string;
  user_name: string;
  external_id: string | null;
  active: boolean;
  attributes: JsonObject;
  email: string | null;
  member_id: string | null;
  link_reason: LinkReason | null;
  created_at: Date;
  updated_at: Date;
  /** The member's account, role and suspension while it is an active member. */
  member_user_id: string | null;
  member_role: string | null;
  member_suspended_at: Date | null;
}

/** Linked means: a member, still in the organization (an admin may have removed it through the API). */
function rowColumns(db: Db) {
  return db
    .selectFrom('directory_users as d')
    .leftJoin('members as m', (join) => join.onRef('m.id', '=', 'd.member_id').on('m.removed_at', 'is', null))
    .select([
      'd.id',
      'd.user_name',
      'd.external_id',
      'd.active',
      sql<JsonObject>`d.attributes`.as('attributes'),
      'd.email',
      'd.member_id',
      'd.link_reason',
      'd.created_at',
      'd.updated_at',
      'm.user_id as member_user_id',
      'm.role as member_role',
      'm.suspended_at as member_suspended_at',
    ]);
}

export interface DirectoryUserValues {
  userName: string;
  externalId: string | null;
  active: boolean;
  attributes: JsonObject;
  email: string | null;
  emailNormalized: string | null;
}

export async function insertDirectoryUser(db: Db, row: { id: string; organizationId: string; now: Date } & DirectoryUserValues): Promise<void> {
  await db
    .insertInto('directory_users')
    .values({
      id: row.id,
      organization_id: row.organizationId,
      user_name: row.userName,
      user_name_normalized: row.userName.toLowerCase(),
      external_id: row.externalId,
      active: row.active,
      attributes: JSON.stringify(row.attributes),
      email: row.email,
      email_normalized: row.emailNormalized,
      member_id: null,
      link_reason: 'no_valid_email',
      created_at: row.now,
      updated_at: row.now,
    })
    .execute();
}

export async function updateDirectoryUser(db: Db, organizationId: string, id: string, values: DirectoryUserValues & { now: Date }): Promise<void> {
  await db
    .updateTable('directory_users')
    .set({
      user_name: values.userName,
      user_name_normalized: values.userName.toLowerCase(),
      external_id: values.externalId,
      active: values.active,
      attributes: JSON.stringify(values.attributes),
      email: values.email,
      email_normalized: values.emailNormalized,
      updated_at: values.now,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .execute();
}

/** The link's outcome: a member, or none and why. */
export async function setLink(db: Db, organizationId: string, id: string, link: { memberId: string } | { reason: LinkReason }): Promise<void> {
  await db
    .updateTable('directory_users')
    .set('memberId' in link ? { member_id: link.memberId, link_reason: null } : { member_id: null, link_reason: link.reason })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .execute();
}

export async function findDirectoryUser(db: Db, organizationId: string, id: string, forUpdate = false): Promise<DirectoryUserRow | undefined> {
  let query = rowColumns(db).where('d.organization_id', '=', organizationId).where('d.id', '=', id);
  if (forUpdate) query = query.forUpdate('d');
  return query.executeTakeFirst();
}

export async function deleteDirectoryUser(db: Db, organizationId: string, id: string): Promise<void> {
  await db.deleteFrom('directory_users').where('organization_id', '=', organizationId).where('id', '=', id).execute();
}

/**
 * The directory user of the organization already linked to a member whose sign-in e-mail is
 * this one (or to that account), other than `exceptId`: the one that holds the e-mail.
 */
export async function holderOfEmail(db: Db, organizationId: string, emailNormalized: string, userId: string | null, exceptId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('directory_users as d')
    .innerJoin('members as m', (join) => join.onRef('m.id', '=', 'd.member_id').on('m.removed_at', 'is', null))
    .select('d.id')
    .where('d.organization_id', '=', organizationId)
    .where('d.id', '<>', exceptId)
    .where((eb) => (userId ? eb.or([eb('d.email_normalized', '=', emailNormalized), eb('m.user_id', '=', userId)]) : eb('d.email_normalized', '=', emailNormalized)))
    .orderBy('d.created_at')
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}

/** The oldest unlinked directory user that could not link because another held this e-mail. */
export async function oldestSharer(db: Db, organizationId: string, emailNormalized: string): Promise<{ id: string; email: string; active: boolean } | undefined> {
  const row = await db
    .selectFrom('directory_users')
    .select(['id', 'email', 'active'])
    .where('organization_id', '=', organizationId)
    .where('email_normalized', '=', emailNormalized)
    .where('link_reason', '=', 'email_shared_with')
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row && { id: row.id, email: row.email!, active: row.active };
}

/** Whether another directory user of the organization is linked to this member. */
export async function linkedToMember(db: Db, organizationId: string, memberId: string): Promise<string | undefined> {
  const row = await db.selectFrom('directory_users').select('id').where('organization_id', '=', organizationId).where('member_id', '=', memberId).executeTakeFirst();
  return row?.id;
}

export interface DirectorySearch {
  where: RawBuilder<SqlBool> | null;
}

/**
 * One page in creation order: OFFSET/LIMIT over directory users alone, which the index
 * (organization_id, created_at, id) serves without a sort; only the page's rows join members.
 * Given the list's total, a page in the second half is cut from the end (the index read
 * backwards), so the skipped entries are the fewer of the two sides: the first and last pages
 * cost the same at any size, a middle page reads up to half the list's index entries.
 */
export async function listPage(db: Db, organizationId: string, search: DirectorySearch, offset: number, limit: number, total?: number): Promise<DirectoryUserRow[]> {
  if (limit === 0 || (total !== undefined && offset >= total)) return [];
  const fromEnd = total !== undefined && offset > total - offset - limit;
  const page = fromEnd ? pageQuery(organizationId, search, Math.max(0, total - offset - limit), Math.min(limit, total - offset), 'desc') : pageQuery(organizationId, search, offset, limit);
  return rowColumns(db)
    .innerJoin(sql<{ id: string; created_at: Date }>`(${page})`.as('p'), 'p.id', 'd.id')
    .orderBy('p.created_at')
    .orderBy('p.id')
    .execute();
}

/** The page's ids (exported so a test can EXPLAIN exactly what a page runs). */
export function pageQuery(organizationId: string, search: DirectorySearch, offset: number, limit: number, direction: 'asc' | 'desc' = 'asc') {
  const where = search.where ? sql`AND ${search.where}` : sql``;
  const order = direction === 'asc' ? sql`ORDER BY d.created_at, d.id` : sql`ORDER BY d.created_at DESC, d.id DESC`;
  return sql<{ id: string; created_at: Date }>`SELECT d.id, d.created_at FROM directory_users d
    WHERE d.organization_id = ${organizationId} ${where}
    ${order} OFFSET ${offset} LIMIT ${limit}`;
}

/** How many directory users match: the kept count when nothing filters them (directory_user_counts). */
export async function countMatching(db: Db, organizationId: string, search: DirectorySearch): Promise<number> {
  if (!search.where) {
    const row = await db.selectFrom('directory_user_counts').select('n').where('organization_id', '=', organizationId).executeTakeFirst();
    return row?.n ?? 0;
  }
  const result = await sql<{ n: number }>`SELECT count(*)::int AS n FROM directory_users d WHERE d.organization_id = ${organizationId} AND ${search.where}`.execute(db);
  return result.rows[0]?.n ?? 0;
}

/** GET /v1/scim/users: newest first, keyset on (created_at, id); `unlinked` includes a removed member's. */
export async function listForAdmin(db: Db, organizationId: string, linkState: 'linked' | 'unlinked' | undefined, after: Position | null, take: number): Promise<DirectoryUserRow[]> {
  let query = rowColumns(db).where('d.organization_id', '=', organizationId);
  if (linkState === 'linked') query = query.where('m.id', 'is not', null);
  if (linkState === 'unlinked') query = query.where('m.id', 'is', null);
  if (after) query = query.where(before('d.created_at', 'd.id', after));
  return query.orderBy('d.created_at', 'desc').orderBy('d.id', 'desc').limit(take).execute();
}

// Groups: their members are directory users.

export async function groupMemberIds(db: Db, teamId: string): Promise<string[]> {
  const rows = await db.selectFrom('directory_group_members').select('directory_user_id').where('team_id', '=', teamId).orderBy('created_at').orderBy('directory_user_id').execute();
  return rows.map((r) => r.directory_user_id);
}

export async function addGroupMembers(db: Db, organizationId: string, teamId: string, directoryUserIds: string[], now: Date): Promise<void> {
  if (directoryUserIds.length === 0) return;
  await db
    .insertInto('directory_group_members')
    .values(directoryUserIds.map((id) => ({ team_id: teamId, directory_user_id: id, organization_id: organizationId, created_at: now })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export async function removeGroupMembers(db: Db, organizationId: string, teamId: string, directoryUserIds: string[]): Promise<void> {
  if (directoryUserIds.length === 0) return;
  await db.deleteFrom('directory_group_members').where('organization_id', '=', organizationId).where('team_id', '=', teamId).where('directory_user_id', 'in', directoryUserIds).execute();
}

/** The active members of these directory users (the linked ones), by directory user id. */
export async function membersOf(db: Db, organizationId: string, directoryUserIds: string[]): Promise<string[]> {
  if (directoryUserIds.length === 0) return [];
  const rows = await db
    .selectFrom('directory_users as d')
    .innerJoin('members as m', (join) => join.onRef('m.id', '=', 'd.member_id').on('m.removed_at', 'is', null))
    .select('m.id')
    .where('d.organization_id', '=', organizationId)
    .where('d.id', 'in', directoryUserIds)
    .execute();
  return rows.map((r) => r.id);
}

/** The directory users among these ids that belong to the organization. */
export async function existingIds(db: Db, organizationId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('directory_users').select('id').where('organization_id', '=', organizationId).where('id', 'in', ids).execute();
  return rows.map((r) => r.id);
}

/** The teams a directory user is in (as a Group member): its member joins them when it links. */
export async function groupsOf(db: Db, organizationId: string, directoryUserId: string): Promise<string[]> {
  const rows = await db.selectFrom('directory_group_members').select('team_id').where('organization_id', '=', organizationId).where('directory_user_id', '=', directoryUserId).execute();
  return rows.map((r) => r.team_id);
}
