import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs, sizeInText } from '../db/connect';
import { jsonPageOf, jsonPageSelect, type JsonPage } from '../db/json-page';
import { isoTimestamp } from '../db/json-sql';
import type { ResourceRole } from '../access/resource-roles';
import { before, type Position } from '../lib/pagination';
import type { GrantedResource } from './resources';

/** A grant row of any of the grants tables (the resource column is left out: the caller knows it). */
export interface GrantRow {
  id: string;
  member_id: string | null;
  team_id: string | null;
  org_wide: boolean;
  role: ResourceRole;
  created_by_member_id: string | null;
  created_at: Date;
  removed_at: Date | null;
}

export type GrantTarget = { memberId: string } | { teamId: string } | { orgWide: true };

export interface NewGrant {
  id: string;
  organizationId: string;
  resourceId: string;
  target: GrantTarget;
  role: ResourceRole;
  createdByMemberId: string | null;
  now: Date;
}

const COLUMNS = sql`g.id, g.member_id, g.team_id, g.org_wide, g.role, g.created_by_member_id, g.created_at, g.removed_at`;

function targetColumns(target: GrantTarget) {
  return {
    memberId: 'memberId' in target ? target.memberId : null,
    teamId: 'teamId' in target ? target.teamId : null,
    orgWide: 'orgWide' in target,
  };
}

/**
 * The contract's `AccessGrant` as JSON made by Postgres: the fields of toGrant (./service.ts) in
 * its order (constant SQL text, src/db/json-sql.ts says why).
 */
const GRANT_JSON = sql.raw(`json_build_object(
    'id', p.id, 'orgMembershipId', p.member_id, 'teamId', p.team_id, 'orgWide', p.org_wide, 'role', p.role,
    'createdByOrgMembershipId', p.created_by_member_id, 'createdAt', ${isoTimestamp('p.created_at')}, 'removedAt', ${isoTimestamp('p.removed_at')}
  )`);

/**
 * One page of `limit` of a resource's grants (revoked ones included), newest first: an index range
 * scan at any depth. The items are JSON text sent as it is, as GET /v1/members' pages are
 * (src/db/json-page.ts): a page of revoked grants parsed two timestamps per row into Dates and wrote
 * them back as text, which made it cost more than a page of active ones (bench scenario 2).
 */
export async function grantsPage(
  db: Db,
  resource: GrantedResource,
  organizationId: string,
  resourceId: string,
  after: Position | null,
  limit: number,
): Promise<JsonPage> {
  const { table, resourceColumn } = resource.ref;
  const rows = sql`SELECT ${COLUMNS}, row_number() OVER (ORDER BY g.created_at DESC, g.id DESC) AS n FROM ${sql.table(table)} g
    WHERE g.${sql.ref(resourceColumn)} = ${resourceId} AND g.organization_id = ${organizationId}
      ${after ? sql`AND ${before('g.created_at', 'g.id', after)}` : sql``}
    ORDER BY g.created_at DESC, g.id DESC
    LIMIT ${sizeInText(limit + 1)}`;
  const result = await sql<{ items_json: string; last_created_at: Date | null; last_id: string | null }>`${preparedAs(`grants_page_${table}${after ? '_after' : ''}_${limit}`)}
    ${jsonPageSelect(GRANT_JSON, rows, limit)}`.execute(db);
  const row = result.rows[0]!;
  return jsonPageOf(row.items_json, row.last_created_at, row.last_id);
}

/**
 * Inserts a grant, or updates the role of the target's active grant (race-safe through the
 * partial unique index per target kind). `created` tells which happened.
 */
export async function upsertGrant(db: Db, resource: GrantedResource, grant: NewGrant): Promise<{ row: GrantRow; created: boolean }> {
  const { table, resourceColumn } = resource.ref;
  const t = targetColumns(grant.target);
  const conflict = t.memberId
    ? sql`(${sql.ref(resourceColumn)}, member_id) WHERE removed_at IS NULL AND member_id IS NOT NULL`
    : t.teamId
      ? sql`(${sql.ref(resourceColumn)}, team_id) WHERE removed_at IS NULL AND team_id IS NOT NULL`
      : sql`(${sql.ref(resourceColumn)}) WHERE removed_at IS NULL AND org_wide`;
  const result = await sql<GrantRow & { created: boolean }>`
    INSERT INTO ${sql.table(table)} AS g
      (id, organization_id, ${sql.ref(resourceColumn)}, member_id, team_id, org_wide, role, created_by_member_id, created_at, removed_at)
    VALUES (${grant.id}, ${grant.organizationId}, ${grant.resourceId}, ${t.memberId}, ${t.teamId}, ${t.orgWide}, ${grant.role},
      ${grant.createdByMemberId}, ${grant.now}, NULL)
    ON CONFLICT ${conflict} DO UPDATE SET role = EXCLUDED.role
    RETURNING ${COLUMNS}, (xmax = 0) AS created`.execute(db);
  const { created, ...row } = result.rows[0]!;
  return { row, created };
}

/** The multi-row INSERT of new grants, as a statement to run or to embed (a CTE of a bigger write). */
export function grantsInsert(resource: GrantedResource, grants: (NewGrant & { removedAt?: Date | null })[]): RawBuilder<unknown> {
  const { table, resourceColumn } = resource.ref;
  const rows = grants.map((g) => {
    const t = targetColumns(g.target);
    return sql`(${g.id}, ${g.organizationId}, ${g.resourceId}, ${t.memberId}, ${t.teamId}, ${t.orgWide}, ${g.role}, ${g.createdByMemberId}, ${g.now}, ${g.removedAt ?? null})`;
  });
  return sql`INSERT INTO ${sql.table(table)}
      (id, organization_id, ${sql.ref(resourceColumn)}, member_id, team_id, org_wide, role, created_by_member_id, created_at, removed_at)
    VALUES ${sql.join(rows)}`;
}

/** Plain multi-row insert of new grants (creation defaults, tests, seeding). */
export async function insertGrants(db: Db, resource: GrantedResource, grants: (NewGrant & { removedAt?: Date | null })[]): Promise<void> {
  if (grants.length === 0) return;
  await grantsInsert(resource, grants).execute(db);
}

/** Soft revoke; a second revoke keeps the first `removed_at`. Undefined when no such grant. */
export async function revokeGrant(
  db: Db,
  resource: GrantedResource,
  organizationId: string,
  resourceId: string,
  grantId: string,
  now: Date,
): Promise<GrantRow | undefined> {
  const { table, resourceColumn } = resource.ref;
  const result = await sql<GrantRow>`
    UPDATE ${sql.table(table)} AS g SET removed_at = coalesce(g.removed_at, ${now})
    WHERE g.id = ${grantId} AND g.organization_id = ${organizationId} AND g.${sql.ref(resourceColumn)} = ${resourceId}
    RETURNING ${COLUMNS}`.execute(db);
  return result.rows[0];
}

/** The active grants of some resources (a page of them), oldest first, with the resource id. */
export async function activeGrantsOf(
  db: Db,
  resource: GrantedResource,
  organizationId: string,
  resourceIds: string[],
): Promise<(GrantRow & { resource_id: string })[]> {
  if (resourceIds.length === 0) return [];
  const { table, resourceColumn } = resource.ref;
  const result = await sql<GrantRow & { resource_id: string }>`
    SELECT ${COLUMNS}, g.${sql.ref(resourceColumn)} AS resource_id FROM ${sql.table(table)} g
    WHERE g.organization_id = ${organizationId} AND g.${sql.ref(resourceColumn)} IN (${sql.join(resourceIds)}) AND g.removed_at IS NULL
    ORDER BY g.created_at, g.id`.execute(db);
  return result.rows;
}

function targetKey(t: GrantTarget): string {
  return 'orgWide' in t ? 'org' : 'memberId' in t ? `m:${t.memberId}` : `t:${t.teamId}`;
}

function rowTarget(g: GrantRow): GrantTarget {
  return g.org_wide ? { orgWide: true } : g.member_id ? { memberId: g.member_id } : { teamId: g.team_id! };
}

/**
 * Makes the active grants of one resource exactly `targets`, each with `role`: missing ones are
 * added, the others revoked (run it in the caller's transaction).
 */
export async function replaceActiveGrants(
  db: Db,
  resource: GrantedResource,
  input: { organizationId: string; resourceId: string; targets: GrantTarget[]; role: ResourceRole; byMemberId: string; now: Date; newId: () => string },
): Promise<void> {
  const { table, resourceColumn } = resource.ref;
  const current = await activeGrantsOf(db, resource, input.organizationId, [input.resourceId]);
  const wanted = new Map(input.targets.map((t) => [targetKey(t), t]));
  const have = new Set(current.map((g) => targetKey(rowTarget(g))));
  const revoke = current.filter((g) => !wanted.has(targetKey(rowTarget(g)))).map((g) => g.id);
  if (revoke.length > 0) {
    await sql`UPDATE ${sql.table(table)} SET removed_at = ${input.now}
      WHERE organization_id = ${input.organizationId} AND ${sql.ref(resourceColumn)} = ${input.resourceId} AND id IN (${sql.join(revoke)})`.execute(db);
  }
  const add = [...wanted.entries()].filter(([key]) => !have.has(key)).map(([, target]) => target);
  await insertGrants(
    db,
    resource,
    add.map((target) => ({
      id: input.newId(),
      organizationId: input.organizationId,
      resourceId: input.resourceId,
      target,
      role: input.role,
      createdByMemberId: input.byMemberId,
      now: input.now,
    })),
  );
}

export async function memberExists(db: Db, organizationId: string, memberId: string): Promise<boolean> {
  const row = await db
    .selectFrom('members')
    .select('id')
    .where('id', '=', memberId)
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

export async function teamExists(db: Db, organizationId: string, teamId: string): Promise<boolean> {
  const row = await db.selectFrom('teams').select('id').where('id', '=', teamId).where('organization_id', '=', organizationId).executeTakeFirst();
  return row !== undefined;
}

/** Rows with the `createdAt` the keyset paginator reads (stores select snake_case columns). */
export function withPosition<R extends { id: string; created_at: Date }>(rows: R[]): (R & Position)[] {
  return rows.map((row) => ({ ...row, createdAt: row.created_at }));
}
