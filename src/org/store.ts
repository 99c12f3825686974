import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';
import type { SessionPreload } from '../principal/session';
import type { AccessTokenPreload } from '../principal/access-token';
import { isoTimestamp } from '../db/json-sql';
import { memberJson } from '../members/member-json';

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

/**
 * GET /v1/org's answer, the contract's `OrganizationContext`, as JSON text made by Postgres in
 * one column (sent as it is: src/lib/json-text.ts), so the context costs the driver one field to
 * parse instead of twenty and the service nothing to map. This SQL is its mapper: the fields of
 * toOrganization (./mappers.ts) and toMember plus `directoryUserId` (src/members/member-json.ts),
 * and the member's teams (oldest first, each with its member count as the team row keeps it), so
 * its size does not depend on the size of any team.
 *
 * Reads organization `o`, member `m` with user `u`, owner `ow`/`owu`; null when the member or the
 * organization is missing.
 */
function contextColumn(member: 'person' | 'any') {
  // A session's member is always a person; another credential's may be a service account (`sa`).
  const account = member === 'person' ? { id: 'NULL', name: 'NULL', disabledAt: 'NULL' } : { id: 'sa.id', name: 'sa.name', disabledAt: 'sa.disabled_at' };
  return sql.raw(`CASE WHEN o.id IS NOT NULL AND m.id IS NOT NULL THEN json_build_object(
    'organization', json_build_object(
      'id', o.id, 'name', o.name, 'plan', o.plan,
      'owner', CASE WHEN ow.id IS NULL THEN NULL ELSE json_build_object('memberId', ow.id, 'userId', owu.id, 'name', owu.name, 'email', owu.email, 'image', owu.image) END,
      'createdAt', ${isoTimestamp('o.created_at')}, 'updatedAt', ${isoTimestamp('o.updated_at')}),
    'currentMember', ${memberJson({
      id: 'm.id',
      organizationId: 'm.organization_id',
      type: 'm.type',
      userId: 'u.id',
      role: 'm.role',
      suspendedAt: 'm.suspended_at',
      createdAt: 'm.created_at',
      userName: 'u.name',
      userEmail: 'u.email',
      userImage: 'u.image',
      serviceAccountId: account.id,
      serviceAccountName: account.name,
      serviceAccountDisabledAt: account.disabledAt,
      directoryUserId: '(SELECT d.id FROM directory_users d WHERE d.member_id = m.id)',
    })},
    'currentMemberTeams', (SELECT coalesce(json_agg(json_build_object(
        'id', t.id, 'name', t.name, 'memberCount', t.member_count, 'createdAt', ${isoTimestamp('t.created_at')}
      ) ORDER BY t.created_at, t.id), '[]'::json)
      FROM team_members mine
      JOIN teams t ON t.id = mine.team_id
      WHERE mine.member_id = m.id AND t.organization_id = m.organization_id)
  )::text END AS org_context_json`);
}
const CONTEXT_COLUMN = contextColumn('person');
const ANY_MEMBER_CONTEXT_COLUMN = contextColumn('any');

/** The organization, its owner (absent when none) and the owner's user, for member `m` (may be null). */
const CONTEXT_JOINS = sql.raw(`LEFT JOIN organizations o ON o.id = m.organization_id
  LEFT JOIN members ow ON ow.organization_id = m.organization_id AND ow.role = 'owner' AND ow.removed_at IS NULL
  LEFT JOIN users owu ON owu.id = ow.user_id`);

/**
 * GET /v1/org's answer in one round trip; undefined when the member is not an active member of
 * the organization.
 */
export async function organizationContext(db: Db, organizationId: string, memberId: string): Promise<string | undefined> {
  const result = await sql<{ org_context_json: string | null }>`${preparedAs('org_context')}
    SELECT ${ANY_MEMBER_CONTEXT_COLUMN}
    FROM members m LEFT JOIN users u ON u.id = m.user_id LEFT JOIN service_accounts sa ON sa.member_id = m.id ${CONTEXT_JOINS}
    WHERE m.organization_id = ${organizationId} AND m.id = ${memberId} AND m.removed_at IS NULL AND m.suspended_at IS NULL`.execute(db);
  return result.rows[0]?.org_context_json ?? undefined;
}

/**
 * GET /v1/org's answer read by the session check itself (src/principal/session.ts runs the one
 * session query with this column and these joins), so the request is one round trip.
 */
export const organizationContextPreload: SessionPreload<string> = {
  name: 'org_context',
  columns: CONTEXT_COLUMN,
  joins: CONTEXT_JOINS,
  read: (row) => (row.org_context_json as string | null) ?? undefined,
};

/**
 * The same answer read by an access token's check (src/principal/access-token.ts runs its one
 * statement with this column and these joins): its member may be a service account (`sa`, joined
 * by that statement), and the member's user is joined here.
 */
export const organizationContextTokenPreload: AccessTokenPreload<string> = {
  name: 'org_context',
  columns: ANY_MEMBER_CONTEXT_COLUMN,
  joins: sql.join([sql.raw('LEFT JOIN users u ON u.id = m.user_id'), CONTEXT_JOINS], sql.raw('\n  ')),
  read: (row) => (row.org_context_json as string | null) ?? undefined,
};

/** A platform admin's plan change; false when there is no such organization. */
export async function setPlan(db: Db, organizationId: string, plan: string, now: Date): Promise<boolean> {
  const row = await db.updateTable('organizations').set({ plan, updated_at: now }).where('id', '=', organizationId).returning('id').executeTakeFirst();
  return row !== undefined;
}

/** The organization's SSO enforcement, locked for a change; undefined when there is no such organization. */
export async function lockSsoEnforced(db: Db, organizationId: string): Promise<boolean | undefined> {
  const row = await db.selectFrom('organizations').select('sso_enforced').where('id', '=', organizationId).forUpdate().executeTakeFirst();
  return row?.sso_enforced;
}

export async function setSsoEnforced(db: Db, organizationId: string, enforce: boolean): Promise<void> {
  await db.updateTable('organizations').set({ sso_enforced: enforce }).where('id', '=', organizationId).execute();
}
