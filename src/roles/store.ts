import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import { newId } from '../lib/ids';
import { BUILT_IN_ROLE_DEFINITIONS } from '../access/builtin-roles';

export interface RoleRow {
  id: string;
  key: string;
  name: string;
  description: string;
  permissions: string[];
  built_in: boolean;
  created_at: Date;
  updated_at: Date;
  member_count: number;
}

/** A role with the number of active members holding it. */
function roleQuery(db: Db, organizationId: string) {
  return db
    .selectFrom('organization_roles as r')
    .select([
      'r.id',
      'r.key',
      'r.name',
      'r.description',
      'r.permissions',
      'r.built_in',
      'r.created_at',
      'r.updated_at',
      sql<number>`(SELECT count(*)::int FROM members m WHERE m.organization_id = r.organization_id AND m.role = r.key AND m.removed_at IS NULL)`.as('member_count'),
    ])
    .where('r.organization_id', '=', organizationId);
}

export async function listRoles(db: Db, organizationId: string, after: Position | null, take: number): Promise<(RoleRow & Position)[]> {
  let query = roleQuery(db, organizationId);
  if (after) query = query.where(before('r.created_at', 'r.id', after));
  const rows = await query.orderBy('r.created_at', 'desc').orderBy('r.id', 'desc').limit(take).execute();
  return rows.map((row) => ({ ...row, createdAt: row.created_at }));
}

export async function findRole(db: Db, organizationId: string, roleId: string): Promise<RoleRow | undefined> {
  return roleQuery(db, organizationId).where('r.id', '=', roleId).executeTakeFirst();
}

/** What assigning a role needs of it: its key and permissions (no member count). */
export interface RoleGrant {
  key: string;
  built_in: boolean;
  permissions: string[];
}

export async function findRoleGrant(db: Db, organizationId: string, key: string): Promise<RoleGrant | undefined> {
  return db.selectFrom('organization_roles').select(['key', 'built_in', 'permissions']).where('organization_id', '=', organizationId).where('key', '=', key).executeTakeFirst();
}

export async function findRoleByKey(db: Db, organizationId: string, key: string): Promise<RoleRow | undefined> {
  return roleQuery(db, organizationId).where('r.key', '=', key).executeTakeFirst();
}

/**
 * Holds the roles (FOR SHARE) until the transaction ends: a write naming them in a column without a
 * foreign key (SSO connection mappings) cannot race with a delete of one of them.
 */
export async function shareLockRoles(db: Db, organizationId: string, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await db.selectFrom('organization_roles').select('id').where('organization_id', '=', organizationId).where('key', 'in', keys).forShare().execute();
}

/** Locks the role row for a change that must not race with another (delete with reassignment). */
export async function lockRole(db: Db, organizationId: string, roleId: string): Promise<{ key: string; built_in: boolean } | undefined> {
  return db
    .selectFrom('organization_roles')
    .select(['key', 'built_in'])
    .where('organization_id', '=', organizationId)
    .where('id', '=', roleId)
    .forUpdate()
    .executeTakeFirst();
}

/** The three built-in roles of a new organization (before its owner joins: members point at them). */
export async function insertBuiltInRoles(db: Db, organizationId: string, now: Date): Promise<void> {
  await db
    .insertInto('organization_roles')
    .values(
      BUILT_IN_ROLE_DEFINITIONS.map((role) => ({
        id: newId('role'),
        organization_id: organizationId,
        key: role.key,
        name: role.name,
        description: role.description,
        permissions: [],
        built_in: true,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
}

export async function insertRole(
  db: Db,
  role: { id: string; organizationId: string; key: string; name: string; description: string; permissions: string[]; now: Date },
): Promise<void> {
  await db
    .insertInto('organization_roles')
    .values({
      id: role.id,
      organization_id: role.organizationId,
      key: role.key,
      name: role.name,
      description: role.description,
      permissions: role.permissions,
      built_in: false,
      created_at: role.now,
      updated_at: role.now,
    })
    .execute();
}

/** Updates a custom role; false when there is no such custom role. */
export async function updateRole(
  db: Db,
  organizationId: string,
  roleId: string,
  patch: { name?: string; description?: string; permissions?: string[] },
  now: Date,
): Promise<boolean> {
  const row = await db
    .updateTable('organization_roles')
    .set({ ...patch, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', roleId)
    .where('built_in', '=', false)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** SSO connections giving the role: as their default role, or in a group mapping. */
const givenByConnection = (key: string) =>
  sql<boolean>`(default_role = ${key} OR role_mappings @> jsonb_build_array(jsonb_build_object('role', ${key}::text)))`;

export interface RoleHolders {
  members: number;
  invitations: number;
  connections: number;
}

/** Active members, pending (unexpired) invitations and SSO connections holding the role. */
export async function holdersOf(db: Db, organizationId: string, key: string, now: Date): Promise<RoleHolders> {
  const row = await sql<RoleHolders>`SELECT
      (SELECT count(*)::int FROM members WHERE organization_id = ${organizationId} AND role = ${key} AND removed_at IS NULL) AS members,
      (SELECT count(*)::int FROM invitations WHERE organization_id = ${organizationId} AND role = ${key} AND status = 'pending' AND expires_at > ${now}) AS invitations,
      (SELECT count(*)::int FROM sso_connections WHERE organization_id = ${organizationId} AND ${givenByConnection(key)}) AS connections`.execute(db);
  return row.rows[0]!;
}

export async function deleteRole(db: Db, organizationId: string, roleId: string): Promise<void> {
  await db.deleteFrom('organization_roles').where('organization_id', '=', organizationId).where('id', '=', roleId).where('built_in', '=', false).execute();
}

/** The permissions a member's current role holds (built-in rows: none stored). Undefined: no such active member. */
export async function memberRole(db: Db, organizationId: string, memberId: string): Promise<{ role: string; built_in: boolean; permissions: string[] } | undefined> {
  return db
    .selectFrom('members as m')
    .innerJoin('organization_roles as r', (join) => join.onRef('r.organization_id', '=', 'm.organization_id').onRef('r.key', '=', 'm.role'))
    .select(['m.role', 'r.built_in', 'r.permissions'])
    .where('m.organization_id', '=', organizationId)
    .where('m.id', '=', memberId)
    .where('m.removed_at', 'is', null)
    .executeTakeFirst();
}
