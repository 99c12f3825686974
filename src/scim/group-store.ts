import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../db/schema';

export interface ScimTeamRow {
  id: string;
  name: string;
  external_id: string | null;
  created_at: Date;
  updated_at: Date;
  /** Its directory users' ids (the Group's members); null when the caller asked not to read members. */
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
        ? sql<string[]>`coalesce((SELECT array_agg(g.directory_user_id ORDER BY g.created_at, g.directory_user_id)
            FROM directory_group_members g WHERE g.team_id = t.id), '{}')`.as('member_ids')
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
