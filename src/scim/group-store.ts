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

/**
 * The Group's members of team `t`, as rows `(value, since)` (docs/scim.md#groups): the directory
 * user of every member of the team who has one, whatever made the team or added the member (the
 * API, SCIM, SSO), and the unlinked directory users SCIM put in the Group (their member joins when
 * they link). A linked directory user is a member through its member alone, so one taken out of
 * the team through the API is out of the Group too. The two parts never share a row.
 */
export const GROUP_MEMBERS = sql<{ value: string; since: Date }>`
  SELECT d.id AS value, tm.created_at AS since
    FROM team_members tm
    JOIN members m ON m.id = tm.member_id AND m.removed_at IS NULL
    JOIN directory_users d ON d.member_id = m.id
   WHERE tm.team_id = t.id
  UNION ALL
  SELECT g.directory_user_id, g.created_at
    FROM directory_group_members g
    JOIN directory_users d ON d.id = g.directory_user_id
    LEFT JOIN members m ON m.id = d.member_id AND m.removed_at IS NULL
   WHERE g.team_id = t.id AND m.id IS NULL`;

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
        ? sql<string[]>`coalesce((SELECT array_agg(gm.value ORDER BY gm.since, gm.value) FROM (${GROUP_MEMBERS}) gm), '{}')`.as('member_ids')
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
