import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../db/schema';
import type { Role } from '../domain/principal';
import { normalizeEmail } from '../users/service';
import type { JsonObject } from './attributes';

/** A member as SCIM sees it: the member row's SCIM columns and the user's e-mail and name. */
export interface ScimMemberRow {
  id: string;
  user_id: string;
  role: Role;
  created_at: Date;
  updated_at: Date | null;
  suspended_at: Date | null;
  external_id: string | null;
  scim_attributes: JsonObject | null;
  email: string;
  user_name: string | null;
}

function memberColumns(db: Db) {
  return db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select([
      'm.id',
      'm.user_id',
      sql<Role>`m.role`.as('role'),
      'm.created_at',
      'm.updated_at',
      'm.suspended_at',
      'm.external_id',
      sql<JsonObject | null>`m.scim_attributes`.as('scim_attributes'),
      'u.email',
      'u.name as user_name',
    ]);
}

/** The resource's e-mails as SQL, as documentOf shows them (the account's e-mail for a member SCIM never wrote). */
export const EMAILS_SQL = sql`(CASE WHEN m.scim_attributes IS NULL THEN jsonb_build_array(jsonb_build_object('value', u.email, 'primary', true, 'type', 'work'))
  ELSE coalesce(m.scim_attributes -> 'emails', '[]'::jsonb) END)`;

export interface MemberSearch {
  where: RawBuilder<SqlBool> | null;
  /** The filter reads the user's columns, so the page's inner query joins users. */
  needsUser: boolean;
}

/**
 * One page in creation order. The page is cut (OFFSET/LIMIT) in an inner query over members
 * alone when the filter allows, so a deep page skips index entries of the partial index
 * members_org_active_order_idx instead of joining every skipped member to its user.
 */
export async function listMembers(db: Db, organizationId: string, search: MemberSearch, offset: number, limit: number): Promise<ScimMemberRow[]> {
  if (limit === 0) return [];
  const join = search.needsUser ? sql`JOIN users u ON u.id = m.user_id` : sql``;
  const where = search.where ? sql`AND ${search.where}` : sql``;
  const page = sql`SELECT m.id, m.created_at FROM members m ${join}
    WHERE m.organization_id = ${organizationId} AND m.removed_at IS NULL ${where}
    ORDER BY m.created_at, m.id OFFSET ${offset} LIMIT ${limit}`;
  return memberColumns(db)
    .innerJoin(sql<{ id: string; created_at: Date }>`(${page})`.as('p'), 'p.id', 'm.id')
    .orderBy('p.created_at')
    .orderBy('p.id')
    .execute();
}

export async function countMembers(db: Db, organizationId: string, search: MemberSearch): Promise<number> {
  const join = search.needsUser ? sql`JOIN users u ON u.id = m.user_id` : sql``;
  const where = search.where ? sql`AND ${search.where}` : sql``;
  const result = await sql<{ n: number }>`SELECT count(*)::int AS n FROM members m ${join}
    WHERE m.organization_id = ${organizationId} AND m.removed_at IS NULL ${where}`.execute(db);
  return result.rows[0]?.n ?? 0;
}

export async function findMember(db: Db, organizationId: string, memberId: string, forUpdate = false): Promise<ScimMemberRow | undefined> {
  let query = memberColumns(db).where('m.organization_id', '=', organizationId).where('m.id', '=', memberId).where('m.removed_at', 'is', null);
  if (forUpdate) query = query.forUpdate('m');
  return query.executeTakeFirst();
}

export async function findMemberByEmail(db: Db, organizationId: string, email: string): Promise<ScimMemberRow | undefined> {
  return memberColumns(db)
    .where('m.organization_id', '=', organizationId)
    .where('u.email_normalized', '=', normalizeEmail(email))
    .where('m.removed_at', 'is', null)
    .executeTakeFirst();
}

/** How many active memberships the user has in other organizations. */
export async function otherMemberships(db: Db, userId: string, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom('members')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('user_id', '=', userId)
    .where('organization_id', '<>', organizationId)
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return row.n;
}

/**
 * A password-less account (made by SCIM, never signed up) that was a member of this organization
 * and belongs to no other: deprovisioned here, it may be provisioned here again (a new member).
 */
export async function provisionedHereBefore(db: Db, userId: string, organizationId: string): Promise<boolean> {
  const row = await db
    .selectFrom('users as u')
    .select([
      sql<boolean>`EXISTS (SELECT 1 FROM members m WHERE m.user_id = u.id AND m.organization_id = ${organizationId})`.as('here'),
      sql<boolean>`EXISTS (SELECT 1 FROM members m WHERE m.user_id = u.id AND m.organization_id <> ${organizationId} AND m.removed_at IS NULL)`.as('elsewhere'),
    ])
    .where('u.id', '=', userId)
    .where('u.password_hash', 'is', null)
    .executeTakeFirst();
  return row !== undefined && row.here && !row.elsewhere;
}
