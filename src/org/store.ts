import { sql, type Kysely, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { Role } from '../http/types';

type Db = Kysely<DB> | Transaction<DB>;

export interface OrganizationRow {
  id: string;
  name: string;
  plan: string;
  created_at: Date;
  updated_at: Date;
}

export interface OwnerRow {
  memberId: string;
  userId: string;
  name: string | null;
  email: string;
  image: string | null;
}

export interface MemberRow {
  id: string;
  organization_id: string;
  user_id: string;
  role: Role;
  created_at: Date;
  user_name: string | null;
  user_email: string;
  user_image: string | null;
}

export interface TeamRow {
  id: string;
  name: string;
  created_at: Date;
  member_ids: string[];
}

const ORG_COLUMNS = ['id', 'name', 'plan', 'created_at', 'updated_at'] as const;

export async function insertOrganization(db: Db, org: { id: string; name: string; plan: string; now: Date }): Promise<OrganizationRow> {
  return db
    .insertInto('organizations')
    .values({ id: org.id, name: org.name, plan: org.plan, created_at: org.now, updated_at: org.now })
    .returning(ORG_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function findOrganization(db: Db, organizationId: string): Promise<OrganizationRow | undefined> {
  return db.selectFrom('organizations').select(ORG_COLUMNS).where('id', '=', organizationId).executeTakeFirst();
}

export async function renameOrganization(db: Db, organizationId: string, name: string, now: Date): Promise<OrganizationRow | undefined> {
  return db
    .updateTable('organizations')
    .set({ name, updated_at: now })
    .where('id', '=', organizationId)
    .returning(ORG_COLUMNS)
    .executeTakeFirst();
}

export async function findOwner(db: Db, organizationId: string): Promise<OwnerRow | undefined> {
  return db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.id as memberId', 'u.id as userId', 'u.name as name', 'u.email as email', 'u.image as image'])
    .where('m.organization_id', '=', organizationId)
    .where('m.role', '=', 'owner')
    .where('m.removed_at', 'is', null)
    .executeTakeFirst();
}

export async function insertMember(
  db: Db,
  member: { id: string; organizationId: string; userId: string; role: Role; now: Date },
): Promise<void> {
  await db
    .insertInto('members')
    .values({ id: member.id, organization_id: member.organizationId, user_id: member.userId, role: member.role, created_at: member.now, removed_at: null })
    .execute();
}

function memberQuery(db: Db) {
  return db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select([
      'm.id',
      'm.organization_id',
      'm.user_id',
      sql<Role>`m.role`.as('role'),
      'm.created_at',
      'u.name as user_name',
      'u.email as user_email',
      'u.image as user_image',
    ])
    .where('m.removed_at', 'is', null);
}

export async function findMember(db: Db, organizationId: string, memberId: string): Promise<MemberRow | undefined> {
  return memberQuery(db).where('m.organization_id', '=', organizationId).where('m.id', '=', memberId).executeTakeFirst();
}

/** Teams of one member, each with all of its member ids. */
export async function teamsOfMember(db: Db, organizationId: string, memberId: string): Promise<TeamRow[]> {
  return db
    .selectFrom('teams as t')
    .innerJoin('team_members as mine', (join) => join.onRef('mine.team_id', '=', 't.id').on('mine.member_id', '=', memberId))
    .select([
      't.id',
      't.name',
      't.created_at',
      sql<string[]>`coalesce((SELECT array_agg(tm.member_id ORDER BY tm.created_at, tm.member_id) FROM team_members tm
        JOIN members mm ON mm.id = tm.member_id AND mm.removed_at IS NULL WHERE tm.team_id = t.id), '{}')`.as('member_ids'),
    ])
    .where('t.organization_id', '=', organizationId)
    .orderBy('t.created_at')
    .orderBy('t.id')
    .execute();
}

/** The user's active memberships, most recently joined first. */
export async function membershipsOfUser(db: Db, userId: string): Promise<{ id: string; name: string; role: Role; joinedAt: Date }[]> {
  return db
    .selectFrom('members as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select(['o.id', 'o.name', sql<Role>`m.role`.as('role'), 'm.created_at as joinedAt'])
    .where('m.user_id', '=', userId)
    .where('m.removed_at', 'is', null)
    .orderBy('m.created_at', 'desc')
    .orderBy('m.id', 'desc')
    .execute();
}
