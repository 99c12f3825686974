import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

export interface AdminOrganizationRow {
  id: string;
  name: string;
  plan: string;
  created_at: Date;
  updated_at: Date;
  owner_member_id: string | null;
  owner_user_id: string | null;
  owner_name: string | null;
  owner_email: string | null;
  owner_image: string | null;
  member_count: number;
}

/** Platform-wide on purpose: this is the one store without an organization scope. */
function organizationQuery(db: Db) {
  return db
    .selectFrom('organizations as o')
    .leftJoin('members as ow', (join) => join.onRef('ow.organization_id', '=', 'o.id').on('ow.role', '=', 'owner').on('ow.removed_at', 'is', null))
    .leftJoin('users as u', 'u.id', 'ow.user_id')
    .select([
      'o.id',
      'o.name',
      'o.plan',
      'o.created_at',
      'o.updated_at',
      'ow.id as owner_member_id',
      'u.id as owner_user_id',
      'u.name as owner_name',
      'u.email as owner_email',
      'u.image as owner_image',
      sql<number>`(SELECT count(*)::int FROM members mm WHERE mm.organization_id = o.id AND mm.removed_at IS NULL AND mm.type = 'user')`.as('member_count'),
    ]);
}

export async function listOrganizations(db: Db, after: Position | null, take: number): Promise<AdminOrganizationRow[]> {
  let query = organizationQuery(db);
  if (after) query = query.where(before('o.created_at', 'o.id', after));
  return query.orderBy('o.created_at', 'desc').orderBy('o.id', 'desc').limit(take).execute();
}

export async function findOrganization(db: Db, organizationId: string): Promise<AdminOrganizationRow | undefined> {
  return organizationQuery(db).where('o.id', '=', organizationId).executeTakeFirst();
}
