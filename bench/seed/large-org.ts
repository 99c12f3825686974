import { sql, type Kysely } from 'kysely';
import type { DB } from '../../src/db/schema';
import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';
import { seedOrganization, type SeededOrg } from './org';
import { seedDirectoryUsers } from './directory-users';

export interface LargeOrg extends SeededOrg {
  /** The team every member is in ("Everyone", as directory sync creates it); the caller is in it. */
  everyoneTeamId: string;
  scimToken: string;
}

export interface LargeOrgOptions {
  name: string;
  /** Members in all, owner and caller included. */
  members: number;
  /** Further teams of 10 members each, the caller in every one (scenario 1's shape). */
  smallTeams: number;
  /** Audit entries to add (besides the organization's creation). */
  auditEntries: number;
  /** Unlinked directory users (SCIM Users). */
  directoryUsers: number;
}

/**
 * An organization of any size, set-based: the owner and the caller (an admin) come from
 * seedOrganization (real sessions), the other members are inserted by generate_series (users
 * without passwords, one member row each, created a millisecond apart), then an "Everyone" team
 * holding every member, `smallTeams` teams of ten, audit entries and directory users. The team
 * triggers keep each team's member count, as they do for the API's writes.
 */
export async function seedLargeOrganization(db: Kysely<DB>, options: LargeOrgOptions): Promise<LargeOrg> {
  const base = await seedOrganization(db, { name: options.name, members: 2, teams: 0, plan: 'enterprise' });
  const org = base.organizationId;
  // Ids are valid TypeIDs: a suffix of 26 characters starting with 0, unique per organization.
  const tag = `0${org.slice(-9)}`;
  const others = options.members - 2;
  const start = new Date(Date.now() - others - 1000);
  if (others > 0) {
    await sql`INSERT INTO users (id, email, email_normalized, name, image, password_hash, created_at, updated_at)
      SELECT 'usr_' || ${tag} || lpad(i::text, 16, '0'), 'm' || i || '-' || ${tag} || '@large.bench.test', 'm' || i || '-' || ${tag} || '@large.bench.test',
             'Member ' || i, NULL, NULL, ${start}::timestamptz + i * interval '1 millisecond', ${start}::timestamptz + i * interval '1 millisecond'
      FROM generate_series(1, ${others}) AS i`.execute(db);
    await sql`INSERT INTO members (id, organization_id, user_id, role, created_at)
      SELECT 'om_' || ${tag} || lpad(i::text, 16, '0'), ${org}, 'usr_' || ${tag} || lpad(i::text, 16, '0'), 'member', ${start}::timestamptz + i * interval '1 millisecond'
      FROM generate_series(1, ${others}) AS i`.execute(db);
  }
  const everyoneTeamId = newId('team');
  const now = new Date();
  const smallTeamIds = Array.from({ length: options.smallTeams }, () => newId('team'));
  await db
    .insertInto('teams')
    .values([everyoneTeamId, ...smallTeamIds].map((id, t) => ({ id, organization_id: org, name: t === 0 ? 'Everyone' : `Team ${t}`, created_at: new Date(now.getTime() + t), updated_at: new Date(now.getTime() + t) })))
    .execute();
  await sql`INSERT INTO team_members (team_id, member_id, organization_id, created_at)
    SELECT ${everyoneTeamId}, m.id, ${org}, m.created_at FROM members m WHERE m.organization_id = ${org}`.execute(db);
  for (const [t, teamId] of smallTeamIds.entries()) {
    await sql`INSERT INTO team_members (team_id, member_id, organization_id, created_at)
      SELECT ${teamId}, m.id, ${org}, now() FROM members m
      WHERE m.organization_id = ${org} AND m.id <> ${base.callerMemberId}
      ORDER BY m.id OFFSET ${t * 10} LIMIT 9`.execute(db);
    await db.insertInto('team_members').values({ team_id: teamId, member_id: base.callerMemberId, organization_id: org, created_at: now }).execute();
  }
  // In statements of 100,000 entries: each stays inside the seed connection's query timeout on a busy machine.
  for (let from = 1; from <= options.auditEntries; from += 100_000) {
    const to = Math.min(options.auditEntries, from + 99_999);
    await sql`INSERT INTO audit_logs (id, organization_id, seq, action, actor_type, actor_id, actor_member_id, target_type, target_id, changes, request_id, ip, user_agent, created_at, prev_hash, hash)
      SELECT 'aud_' || ${tag} || lpad(g::text, 16, '0'), ${org}, g + 1, 'team.created', 'member', 'usr_bench', ${base.callerMemberId}, 'team', 'tem_' || ${tag} || lpad(g::text, 16, '0'),
        jsonb_build_object('name', jsonb_build_object('from', null, 'to', 'Team number ' || g)),
        'req-' || g, '127.0.0.1', 'bench/1.0', ${start}::timestamptz + g * interval '1 millisecond', repeat('0', 64), repeat('0', 64)
      FROM generate_series(${from}::int, ${to}::int) AS g`.execute(db);
  }
  if (options.auditEntries > 0) {
    // The chain head at the last seeded entry, so the next audited write (reading the log is one) follows it.
    await sql`UPDATE audit_chain_heads SET seq = ${options.auditEntries + 1} WHERE organization_id = ${org}`.execute(db);
  }
  if (options.directoryUsers > 0) await seedDirectoryUsers(db, org, options.directoryUsers, tag.slice(0, 4));
  const scimToken = randomSecret('cpscim');
  await db
    .insertInto('scim_tokens')
    .values({ id: newId('scimToken'), organization_id: org, name: 'bench', prefix: scimToken.slice(0, 14), token_hash: sha256Hex(scimToken), created_by_member_id: base.ownerMemberId, created_at: now, last_used_at: null, revoked_at: null })
    .execute();
  return { ...base, everyoneTeamId, teamIds: [everyoneTeamId, ...smallTeamIds], scimToken };
}
