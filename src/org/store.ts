import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/connect';
import type { Role } from '../domain/principal';
import type { SessionPreload } from '../principal/session';
import type { MemberRow } from '../members/mappers';

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

export interface OrganizationContextRows {
  organization: OrganizationRow;
  owner: OwnerRow | undefined;
  member: MemberRow;
  /** The member's directory user (SCIM), as GET /v1/members shows it. */
  directoryUserId: string | null;
  /** The member's teams as the contract's `Team[]`, JSON text made by Postgres (see CONTEXT_COLUMNS). */
  teamsJson: string;
}

/** The columns both context queries select, under these names. */
interface ContextColumns {
  id: string | null;
  name: string | null;
  plan: string | null;
  created_at: Date | null;
  updated_at: Date | null;
  member_id: string | null;
  member_organization_id: string | null;
  member_user_id: string | null;
  member_role: Role | null;
  member_created_at: Date | null;
  member_directory_user_id: string | null;
  user_name: string | null;
  user_email: string | null;
  user_image: string | null;
  owner_member_id: string | null;
  owner_user_id: string | null;
  owner_name: string | null;
  owner_email: string | null;
  owner_image: string | null;
  teams_json: string | null;
}

/**
 * Organization `o`, member `m` with user `u`, owner `ow`/`owu`, and the member's teams (oldest
 * first, each with its member count as the team row keeps it) json-aggregated, so the whole
 * context is one row whose size does not depend on the size of any team.
 *
 * The teams are the contract's `Team` objects as JSON text, sent as they are (src/lib/json-text.ts):
 * this SQL is their mapper (the same fields as toTeam in src/teams/mappers.ts; `createdAt` as
 * Date#toISOString writes it, milliseconds truncated as a JS Date holds them).
 */
const CONTEXT_COLUMNS = sql`o.id, o.name, o.plan, o.created_at, o.updated_at,
  m.id AS member_id, m.organization_id AS member_organization_id, m.user_id AS member_user_id, m.role AS member_role,
  m.created_at AS member_created_at,
  (SELECT d.id FROM directory_users d WHERE d.member_id = m.id) AS member_directory_user_id, u.name AS user_name, u.email AS user_email, u.image AS user_image,
  ow.id AS owner_member_id, owu.id AS owner_user_id, owu.name AS owner_name, owu.email AS owner_email, owu.image AS owner_image,
  (SELECT coalesce(json_agg(json_build_object(
      'id', t.id, 'name', t.name, 'memberCount', t.member_count,
      'createdAt', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    ) ORDER BY t.created_at, t.id), '[]'::json)::text
    FROM team_members mine
    JOIN teams t ON t.id = mine.team_id
    WHERE mine.member_id = m.id AND t.organization_id = m.organization_id) AS teams_json`;

/** The organization, its owner (absent when none) and the owner's user, for member `m` (may be null). */
const CONTEXT_JOINS = sql`LEFT JOIN organizations o ON o.id = m.organization_id
  LEFT JOIN members ow ON ow.organization_id = m.organization_id AND ow.role = 'owner' AND ow.removed_at IS NULL
  LEFT JOIN users owu ON owu.id = ow.user_id`;

function toContextRows(row: ContextColumns): OrganizationContextRows | undefined {
  if (!row.id || !row.member_id || !row.member_organization_id || !row.member_user_id || !row.member_role || !row.member_created_at || row.user_email === null) return undefined;
  return {
    organization: { id: row.id, name: row.name!, plan: row.plan!, created_at: row.created_at!, updated_at: row.updated_at! },
    owner:
      row.owner_member_id && row.owner_user_id && row.owner_email !== null
        ? { memberId: row.owner_member_id, userId: row.owner_user_id, name: row.owner_name, email: row.owner_email, image: row.owner_image }
        : undefined,
    member: {
      id: row.member_id,
      organization_id: row.member_organization_id,
      user_id: row.member_user_id,
      role: row.member_role,
      created_at: row.member_created_at,
      user_name: row.user_name,
      user_email: row.user_email,
      user_image: row.user_image,
    },
    directoryUserId: row.member_directory_user_id,
    teamsJson: row.teams_json ?? '[]',
  };
}

/**
 * GET /v1/org's data in one round trip; undefined when the member is not an active member of the
 * organization.
 */
export async function organizationContext(db: Db, organizationId: string, memberId: string): Promise<OrganizationContextRows | undefined> {
  const result = await sql<ContextColumns>`${preparedAs('org_context')}
    SELECT ${CONTEXT_COLUMNS}
    FROM members m JOIN users u ON u.id = m.user_id ${CONTEXT_JOINS}
    WHERE m.organization_id = ${organizationId} AND m.id = ${memberId} AND m.removed_at IS NULL AND m.suspended_at IS NULL`.execute(db);
  return result.rows[0] ? toContextRows(result.rows[0]) : undefined;
}

/**
 * GET /v1/org's data read by the session check itself (src/principal/session.ts runs the one
 * session query with these columns and joins), so the request is one round trip.
 */
export const organizationContextPreload: SessionPreload<OrganizationContextRows> = {
  name: 'org_context',
  columns: CONTEXT_COLUMNS,
  joins: CONTEXT_JOINS,
  read: (row) => toContextRows(row as unknown as ContextColumns),
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
