import { sql, type Kysely, type RawBuilder, type SqlBool, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { Forbidden } from '../lib/errors';
import { ROLE_RANK } from './roles';
import type { Membership, Role } from '../http/types';

/**
 * Resource roles (supporting-interface §2): viewer < editor < manager, granted directly to a member,
 * to a team, or org-wide. The effective role is the highest active (removed_at IS NULL) grant that
 * reaches the member; organization admins are manager on everything; a removed member has none.
 *
 * Written once over any grants table with the shared columns (id, organization_id, <resource>_id,
 * member_id, team_id, org_wide, role, created_by_member_id, created_at, removed_at): marketplaces,
 * plugins, connector instances, and any later resource (MCP connections) describe their table with
 * a `GrantTableRef` and call the same functions.
 */
export type ResourceRole = 'viewer' | 'editor' | 'manager';

export const RESOURCE_ROLES: readonly ResourceRole[] = ['viewer', 'editor', 'manager'];
export const RESOURCE_ROLE_RANK: Record<ResourceRole, number> = { viewer: 1, editor: 2, manager: 3 };

type Db = Kysely<DB> | Transaction<DB>;

export interface GrantTableRef {
  /** The grants table, e.g. `marketplace_grants`. */
  table: string;
  /** Its column naming the resource, e.g. `marketplace_id`. */
  resourceColumn: string;
  /**
   * When set, grants count only while the resource row (alias `r`) satisfies `condition`: an
   * archived marketplace grants nothing until it is restored.
   */
  activeWhen?: { table: string; condition: string };
}

export interface ResolveOptions {
  /** Count grants even while the resource is suspended (used to restore or delete it). */
  includeSuspended?: boolean;
}

/** Highest of two roles (null is lowest). */
export function maxRole(a: ResourceRole | null, b: ResourceRole | null): ResourceRole | null {
  if (!a) return b;
  if (!b) return a;
  return RESOURCE_ROLE_RANK[a] >= RESOURCE_ROLE_RANK[b] ? a : b;
}

export function hasRole(role: ResourceRole | null, needed: ResourceRole): boolean {
  return role !== null && RESOURCE_ROLE_RANK[role] >= RESOURCE_ROLE_RANK[needed];
}

const RANK_SQL = sql<number>`CASE g.role WHEN 'viewer' THEN 1 WHEN 'editor' THEN 2 WHEN 'manager' THEN 3 END`;

function roleOfRank(rank: number | null | undefined): ResourceRole | null {
  return RESOURCE_ROLES[(rank ?? 0) - 1] ?? null;
}

/**
 * `g` (a row of `ref.table`) is active and reaches the member `memberRef` (a SQL expression for the
 * member id): org-wide, direct, or through one of the member's teams.
 */
export function grantReaches(ref: GrantTableRef, memberId: RawBuilder<unknown> | string, options: ResolveOptions = {}): RawBuilder<SqlBool> {
  const member = typeof memberId === 'string' ? sql`${memberId}` : memberId;
  const active =
    ref.activeWhen && !options.includeSuspended
      ? sql`AND EXISTS (SELECT 1 FROM ${sql.table(ref.activeWhen.table)} r WHERE r.id = g.${sql.ref(ref.resourceColumn)} AND ${sql.raw(ref.activeWhen.condition)})`
      : sql``;
  return sql<SqlBool>`(g.removed_at IS NULL
    AND (g.org_wide OR g.member_id = ${member}
      OR g.team_id IN (SELECT tm.team_id FROM team_members tm WHERE tm.member_id = ${member}))
    ${active})`;
}

/**
 * The member's effective role on one resource, or null. One query: the member must be active in
 * the organization (its current organization role decides admin), then the highest grant wins.
 */
export async function resolveResourceRole(
  db: Db,
  ref: GrantTableRef,
  member: { organizationId: string; memberId: string },
  resourceId: string,
  options: ResolveOptions = {},
): Promise<ResourceRole | null> {
  const row = await sql<{ org_role: Role; rank: number | null }>`
    SELECT m.role AS org_role, (
      SELECT max(${RANK_SQL}) FROM ${sql.table(ref.table)} g
      WHERE g.organization_id = ${member.organizationId}
        AND g.${sql.ref(ref.resourceColumn)} = ${resourceId}
        AND ${grantReaches(ref, sql`m.id`, options)}
    ) AS rank
    FROM members m
    WHERE m.id = ${member.memberId} AND m.organization_id = ${member.organizationId} AND m.removed_at IS NULL`.execute(db);
  const found = row.rows[0];
  if (!found) return null;
  if ((ROLE_RANK[found.org_role] ?? 0) >= ROLE_RANK.admin) return 'manager';
  return roleOfRank(found.rank);
}

/**
 * SQL condition "the member may view resource `<alias>.id`", for lists of visible resources.
 * Admins see everything, so callers skip the condition for them.
 */
export function visibleTo(ref: GrantTableRef, alias: string, memberId: string): RawBuilder<SqlBool> {
  return sql<SqlBool>`EXISTS (SELECT 1 FROM ${sql.table(ref.table)} g
    WHERE g.${sql.ref(ref.resourceColumn)} = ${sql.ref(`${alias}.id`)} AND ${grantReaches(ref, memberId)})`;
}

/** Admins (owner, admin) are manager on every resource. */
export function isOrgAdmin(membership: Membership): boolean {
  return ROLE_RANK[membership.role] >= ROLE_RANK.admin;
}

/**
 * Throws 403 unless `role` reaches `needed`. The reason is stable: `<resource>_<needed>_required`
 * (e.g. `marketplace_manager_required`).
 */
export function requireRole(role: ResourceRole | null, needed: ResourceRole, resource: string, label = resource.replace(/_/g, ' ')): void {
  if (!hasRole(role, needed)) {
    throw new Forbidden(`${resource}_${needed}_required`, `This action needs the ${needed} role on the ${label}.`);
  }
}
