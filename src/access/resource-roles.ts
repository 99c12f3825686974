import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';
import { Forbidden } from '../lib/errors';
import type { Membership, PermissionSet } from '../domain/principal';
import { permissionsOfRole } from './role-permissions';

/**
 * Resource roles (docs/plugins.md#resource-roles-and-grants): viewer < editor < manager, granted directly to a member,
 * to a team, or org-wide. The effective role is the highest active (removed_at IS NULL) grant that
 * reaches the member; a member holding the `resources.manage` permission (organization admins) is
 * manager on everything; a removed member has none.
 *
 * Written once over any grants table with the shared columns (id, organization_id, <resource>_id,
 * member_id, team_id, org_wide, role, created_by_member_id, created_at, removed_at): marketplaces,
 * plugins, connector instances, and any later resource (MCP connections) describe their table with
 * a `GrantTableRef` and call the same functions.
 */
export type ResourceRole = 'viewer' | 'editor' | 'manager';

export const RESOURCE_ROLES: readonly ResourceRole[] = ['viewer', 'editor', 'manager'];
export const RESOURCE_ROLE_RANK: Record<ResourceRole, number> = { viewer: 1, editor: 2, manager: 3 };

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

type SqlExpr = RawBuilder<unknown>;

const asSql = (value: RawBuilder<unknown> | string): SqlExpr => (typeof value === 'string' ? sql`${value}` : value);

/**
 * The active grants on `resource` that reach `member`, as three queries, one per target kind, so
 * each is an index lookup (the partial unique indexes on (resource, member_id), (resource, team_id)
 * and (resource) WHERE org_wide). A single `org_wide OR member_id = … OR team_id IN …` condition
 * cannot use them and reads every grant of the resource, revoked ones included (100,000 grants:
 * a 68 ms sequential scan per access check). `select` is what each branch returns from `g`.
 */
function reachingGrants(ref: GrantTableRef, resource: SqlExpr, member: SqlExpr, select: SqlExpr, extra: SqlExpr = sql``): SqlExpr {
  const table = sql.table(ref.table);
  const col = sql.ref(`g.${ref.resourceColumn}`);
  return sql`SELECT ${select} FROM ${table} g WHERE ${col} = ${resource} AND g.member_id = ${member} AND g.removed_at IS NULL ${extra}
    UNION ALL
    SELECT ${select} FROM ${table} g WHERE ${col} = ${resource} AND g.org_wide AND g.removed_at IS NULL ${extra}
    UNION ALL
    SELECT ${select} FROM ${table} g JOIN team_members tm ON tm.team_id = g.team_id
      WHERE ${col} = ${resource} AND tm.member_id = ${member} AND g.removed_at IS NULL ${extra}`;
}

/** The resource row (`resource`) satisfies `ref.activeWhen`, unless suspended resources count. */
function resourceActive(ref: GrantTableRef, resource: SqlExpr, options: ResolveOptions): SqlExpr | null {
  if (!ref.activeWhen || options.includeSuspended) return null;
  return sql`EXISTS (SELECT 1 FROM ${sql.table(ref.activeWhen.table)} r WHERE r.id = ${resource} AND ${sql.raw(ref.activeWhen.condition)})`;
}

/**
 * SQL condition: the member (`memberId`, a value or SQL expression) holds an active grant on the
 * resource `resourceId` (a value or SQL expression, e.g. `sql.ref('mp.marketplace_id')`): org-wide,
 * direct, or through one of the member's teams. Each target kind is its own index lookup.
 */
export function grantReaches(
  ref: GrantTableRef,
  resourceId: RawBuilder<unknown> | string,
  memberId: RawBuilder<unknown> | string,
  options: ResolveOptions = {},
): RawBuilder<SqlBool> {
  const resource = asSql(resourceId);
  const reaches = sql`EXISTS (${reachingGrants(ref, resource, asSql(memberId), sql`1`)})`;
  const active = resourceActive(ref, resource, options);
  return active ? sql<SqlBool>`(${reaches} AND ${active})` : sql<SqlBool>`${reaches}`;
}

/** Holding `resources.manage` makes a member manager on every resource: the one place that says so. */
export function managesAllResources(permissions: PermissionSet): boolean {
  return permissions.has('resources.manage');
}

/**
 * Whose grants limit a list of resources: the member's id, or null when the membership manages
 * every resource (stores then apply no visibility filter).
 */
export function visibilityOf(membership: Membership): string | null {
  return managesAllResources(membership.permissions) ? null : membership.memberId;
}

/**
 * The member's effective role on one resource, or null. With the caller's membership (its
 * permissions resolved with the principal), managing every resource answers without a query;
 * otherwise one query: the member must be active in the organization, and the highest grant
 * wins, read through index lookups per target kind. Given only ids, the member's current role is
 * read in the same query and its permissions decide.
 */
export async function resolveResourceRole(
  db: Db,
  ref: GrantTableRef,
  member: { organizationId: string; memberId: string; permissions?: PermissionSet },
  resourceId: string,
  options: ResolveOptions = {},
): Promise<ResourceRole | null> {
  if (member.permissions && managesAllResources(member.permissions)) return 'manager';
  const resource = sql`${resourceId}`;
  const grants = reachingGrants(ref, resource, sql`m.id`, RANK_SQL, sql`AND g.organization_id = ${member.organizationId}`);
  const active = resourceActive(ref, resource, options);
  // Given only ids, the member's role row comes along so its permissions can decide.
  const withRole = member.permissions === undefined;
  // Prepared per grants table and variant: planning the three branches cost more than running them.
  const name = `resource_role_${ref.table}${active ? '_active' : ''}${withRole ? '_role' : ''}`;
  const row = await sql<{ org_role: string; role_built_in: boolean | null; role_permissions: string[] | null; rank: number | null }>`${preparedAs(name)}
    SELECT m.role AS org_role, ${withRole ? sql`r.built_in` : sql`NULL::boolean`} AS role_built_in,
      ${withRole ? sql`r.permissions` : sql`NULL::text[]`} AS role_permissions,
      CASE WHEN ${active ? sql`NOT ${active}` : sql`false`} THEN NULL
        ELSE (SELECT max(rank) FROM (${grants}) AS reaching (rank)) END AS rank
    FROM members m
    ${withRole ? sql`LEFT JOIN organization_roles r ON r.organization_id = m.organization_id AND r.key = m.role` : sql``}
    WHERE m.id = ${member.memberId} AND m.organization_id = ${member.organizationId} AND m.removed_at IS NULL`.execute(db);
  const found = row.rows[0];
  if (!found) return null;
  const permissions = member.permissions ?? permissionsOfRole({ key: found.org_role, builtIn: found.role_built_in ?? false, permissions: found.role_permissions });
  if (managesAllResources(permissions)) return 'manager';
  return roleOfRank(found.rank);
}

/**
 * SQL condition "the member may view resource `<alias>.id`", for lists of visible resources.
 * Members who manage every resource see everything, so callers skip the condition for them
 * (`visibilityOf`).
 */
export function visibleTo(ref: GrantTableRef, alias: string, memberId: string): RawBuilder<SqlBool> {
  return grantReaches(ref, sql.ref(`${alias}.id`), memberId);
}

/**
 * Throws 403 unless `role` reaches `needed`. The reason is stable: `<resource>_<needed>_required`
 * (e.g. `marketplace_manager_required`).
 */
/** The kinds of resource members hold roles on (the 403 reasons of src/lib/error-codes.ts name them). */
export type RoleResource = 'marketplace' | 'plugin' | 'connector_instance' | 'llm_provider';

export function requireRole(role: ResourceRole | null, needed: ResourceRole, resource: RoleResource, label: string = resource.replace(/_/g, ' ')): void {
  if (!hasRole(role, needed)) {
    throw new Forbidden(`${resource}_${needed}_required`, `This action needs the ${needed} role on the ${label}.`);
  }
}
