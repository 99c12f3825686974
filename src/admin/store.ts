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
  deletion_scheduled_at: Date | null;
  purge_at: Date | null;
}

/** Which organizations a platform admin lists (docs/organization-deletion.md#what-platform-admins-see). */
export type LiveState = 'active' | 'deletion_scheduled';

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
      'o.deletion_scheduled_at',
      'o.purge_at',
      'ow.id as owner_member_id',
      'u.id as owner_user_id',
      'u.name as owner_name',
      'u.email as owner_email',
      'u.image as owner_image',
      sql<number>`(SELECT count(*)::int FROM members mm WHERE mm.organization_id = o.id AND mm.removed_at IS NULL AND mm.type = 'user')`.as('member_count'),
    ]);
}

export async function listOrganizations(db: Db, after: Position | null, take: number, state?: LiveState): Promise<AdminOrganizationRow[]> {
  let query = organizationQuery(db);
  if (state === 'active') query = query.where('o.deletion_scheduled_at', 'is', null);
  if (state === 'deletion_scheduled') query = query.where('o.deletion_scheduled_at', 'is not', null);
  if (after) query = query.where(before('o.created_at', 'o.id', after));
  return query.orderBy('o.created_at', 'desc').orderBy('o.id', 'desc').limit(take).execute();
}

export async function findOrganization(db: Db, organizationId: string): Promise<AdminOrganizationRow | undefined> {
  return organizationQuery(db).where('o.id', '=', organizationId).executeTakeFirst();
}

export interface TombstoneRow {
  id: string;
  name_sha256: string;
  deleted_at: Date;
  deleted_by_user_id: string | null;
  /** When it was purged (the list's order, as `created_at` for the keyset). */
  created_at: Date;
}

/** Purged organizations' tombstones, most recently purged first. */
export async function listTombstones(db: Db, after: Position | null, take: number): Promise<TombstoneRow[]> {
  let query = db
    .selectFrom('organization_tombstones as t')
    .select(['t.organization_id as id', 't.name_sha256', 't.deleted_at', 't.deleted_by_user_id', 't.purged_at as created_at']);
  if (after) query = query.where(before('t.purged_at', 't.organization_id', after));
  return query.orderBy('t.purged_at', 'desc').orderBy('t.organization_id', 'desc').limit(take).execute();
}
