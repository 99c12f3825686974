import { sql } from 'kysely';
import type { AuditCtes } from '../audit';
import type { Db } from '../db/schema';
import { preparedAs, sizeInText } from '../db/connect';
import type { MemberRow } from '../members/mappers';
import type { TeamRow } from './mappers';
import { before, type Position } from '../lib/pagination';

/** A team with its member count (kept on the row by triggers: migration 20261127_0905). */
function teamQuery(db: Db, organizationId: string) {
  return db.selectFrom('teams as t').select(['t.id', 't.name', 't.created_at', 't.member_count']).where('t.organization_id', '=', organizationId);
}

export async function listTeams(db: Db, organizationId: string, after: Position | null, take: number): Promise<TeamRow[]> {
  let query = teamQuery(db, organizationId);
  if (after) query = query.where(before('t.created_at', 't.id', after));
  return query.orderBy('t.created_at', 'desc').orderBy('t.id', 'desc').limit(take).execute();
}

export async function findTeam(db: Db, organizationId: string, teamId: string): Promise<TeamRow | undefined> {
  return teamQuery(db, organizationId).where('t.id', '=', teamId).executeTakeFirst();
}

export async function insertTeam(db: Db, team: { id: string; organizationId: string; name: string; now: Date }): Promise<void> {
  await db
    .insertInto('teams')
    .values({ id: team.id, organization_id: team.organizationId, name: team.name, created_at: team.now, updated_at: team.now })
    .execute();
}

export async function renameTeam(db: Db, organizationId: string, teamId: string, name: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('teams')
    .set({ name, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', teamId)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function deleteTeam(db: Db, organizationId: string, teamId: string): Promise<boolean> {
  const row = await db.deleteFrom('teams').where('organization_id', '=', organizationId).where('id', '=', teamId).returning('id').executeTakeFirst();
  return row !== undefined;
}

/**
 * A new team with no members in ONE statement (atomic by itself, one round trip), answering the
 * row. `audit`: the change's audit entry and event as CTEs (`writeWithAudit`
 * of src/audit), written by the same statement.
 */
export async function insertTeamAlone(db: Db, team: { id: string; organizationId: string; name: string; now: Date }, audit?: AuditCtes): Promise<TeamRow> {
  const result = await sql<TeamRow>`${preparedAs(`create_team${audit?.suffix ?? ''}`)}
    WITH team AS (
      INSERT INTO teams (id, organization_id, name, created_at, updated_at)
      VALUES (${team.id}, ${team.organizationId}, ${team.name}, ${team.now}, ${team.now})
      RETURNING id, name, created_at, member_count
    )${audit ? sql`, ${audit.ctes}` : sql``}
    SELECT * FROM team`.execute(db);
  return result.rows[0]!;
}

/** Idempotent: adding a member already in the team changes nothing. */
export async function addTeamMembers(db: Db, organizationId: string, teamId: string, memberIds: string[], now: Date): Promise<void> {
  if (memberIds.length === 0) return;
  await db
    .insertInto('team_members')
    .values(memberIds.map((memberId) => ({ team_id: teamId, member_id: memberId, organization_id: organizationId, created_at: now })))
    .onConflict((oc) => oc.columns(['team_id', 'member_id']).doNothing())
    .execute();
}

export async function removeTeamMember(db: Db, organizationId: string, teamId: string, memberId: string): Promise<void> {
  await db
    .deleteFrom('team_members')
    .where('organization_id', '=', organizationId)
    .where('team_id', '=', teamId)
    .where('member_id', '=', memberId)
    .execute();
}

/** Of `teamIds`, those that are teams of the organization (to check ids a request names). */
export async function existingTeamIds(db: Db, organizationId: string, teamIds: string[]): Promise<string[]> {
  if (teamIds.length === 0) return [];
  const rows = await db.selectFrom('teams').select('id').where('organization_id', '=', organizationId).where('id', 'in', teamIds).execute();
  return rows.map((r) => r.id);
}

/** A team's name and SCIM `externalId` (SCIM Group PUT and PATCH). */
export async function updateDirectoryTeam(db: Db, organizationId: string, teamId: string, team: { name: string; externalId: string | null; now: Date }): Promise<void> {
  await db
    .updateTable('teams')
    .set({ name: team.name, external_id: team.externalId, updated_at: team.now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', teamId)
    .execute();
}

export async function removeTeamMembers(db: Db, organizationId: string, teamId: string, memberIds: string[]): Promise<void> {
  if (memberIds.length === 0) return;
  await db.deleteFrom('team_members').where('organization_id', '=', organizationId).where('team_id', '=', teamId).where('member_id', 'in', memberIds).execute();
}

/** A removed member leaves every team of the organization. */
export async function leaveAllTeams(db: Db, organizationId: string, memberId: string): Promise<void> {
  await db.deleteFrom('team_members').where('organization_id', '=', organizationId).where('member_id', '=', memberId).execute();
}

/**
 * One page of a team's members, most recently added first, keyed on (added at, member id): an
 * index range scan (team_members_team_page_idx). A prepared statement per page size and shape
 * (sizeInText): planned on every call it cost about three times its execution.
 */
export async function listTeamMembers(
  db: Db,
  organizationId: string,
  teamId: string,
  after: Position | null,
  take: number,
): Promise<(MemberRow & { added_at: Date; directory_user_id: string | null })[]> {
  const result = await sql<MemberRow & { added_at: Date; directory_user_id: string | null }>`${preparedAs(`team_members_page${after ? '_after' : ''}_${take}`)}
    SELECT m.id, m.organization_id, m.type,
      -- The user's id through the join: null for a service account (its account's columns instead).
      u.id AS user_id, m.role, m.created_at, m.suspended_at, u.name AS user_name, u.email AS user_email, u.image AS user_image,
      sa.id AS service_account_id, sa.name AS service_account_name, sa.disabled_at AS service_account_disabled_at,
      tm.created_at AS added_at,
      -- As GET /v1/members gives it (src/members/store.ts).
      (SELECT d.id FROM directory_users d WHERE d.member_id = m.id) AS directory_user_id
    FROM team_members tm
    JOIN members m ON m.id = tm.member_id
    LEFT JOIN users u ON u.id = m.user_id
    LEFT JOIN service_accounts sa ON sa.member_id = m.id
    WHERE tm.organization_id = ${organizationId} AND tm.team_id = ${teamId} AND m.removed_at IS NULL
      ${after ? sql`AND ${before('tm.created_at', 'tm.member_id', after)}` : sql``}
    ORDER BY tm.created_at DESC, tm.member_id DESC
    LIMIT ${sizeInText(take)}`.execute(db);
  return result.rows;
}
