import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../db/schema';

export interface ScimTeamRow {
  id: string;
  name: string;
  external_id: string | null;
  created_at: Date;
  updated_at: Date;
  /** Active members' ids; null when the caller asked not to read members. */
  member_ids: string[] | null;
}

function teamColumns(db: Db, withMembers: boolean) {
  return db
    .selectFrom('teams as t')
    .select([
      't.id',
      't.name',
      't.external_id',
      't.created_at',
      't.updated_at',
      withMembers
        ? sql<string[]>`coalesce((SELECT array_agg(tm.member_id ORDER BY tm.created_at, tm.member_id) FROM team_members tm
            JOIN members mm ON mm.id = tm.member_id AND mm.removed_at IS NULL WHERE tm.team_id = t.id), '{}')`.as('member_ids')
        : sql<null>`NULL`.as('member_ids'),
    ]);
}

export async function listTeams(db: Db, organizationId: string, where: RawBuilder<SqlBool> | null, withMembers: boolean, offset: number, limit: number): Promise<ScimTeamRow[]> {
  if (limit === 0) return [];
  let query = teamColumns(db, withMembers).where('t.organization_id', '=', organizationId);
  if (where) query = query.where(where);
  return query.orderBy('t.created_at').orderBy('t.id').offset(offset).limit(limit).execute();
}

export async function countTeams(db: Db, organizationId: string, where: RawBuilder<SqlBool> | null): Promise<number> {
  let query = db.selectFrom('teams as t').select(sql<number>`count(*)::int`.as('n')).where('t.organization_id', '=', organizationId);
  if (where) query = query.where(where);
  return (await query.executeTakeFirstOrThrow()).n;
}

export async function findTeam(db: Db, organizationId: string, teamId: string, withMembers = true, forUpdate = false): Promise<ScimTeamRow | undefined> {
  let query = teamColumns(db, withMembers).where('t.organization_id', '=', organizationId).where('t.id', '=', teamId);
  if (forUpdate) query = query.forUpdate('t');
  return query.executeTakeFirst();
}

export async function updateTeam(db: Db, organizationId: string, teamId: string, team: { name: string; externalId: string | null; now: Date }): Promise<void> {
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
