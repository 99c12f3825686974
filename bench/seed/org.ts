import type { Kysely } from 'kysely';
import type { DB } from '../../src/db/schema';
import { newId } from '../../src/lib/ids';
import { hashPassword, randomSecret, sha256Hex } from '../../src/lib/crypto';
import { insertSession, insertUser } from '../../src/users/store';
import { insertMember } from '../../src/members/store';
import { createOrganizationIn, type Plan } from '../../src/org/service';
import type { Role } from '../../src/domain/principal';
import { systemContext } from '../../src/audit';
import { systemClock } from '../../src/lib/clock';

export interface SeededOrg {
  organizationId: string;
  ownerMemberId: string;
  /** Session token of the owner. */
  ownerToken: string;
  /** Session token of the benchmark caller: an admin who is in every team. */
  callerToken: string;
  callerMemberId: string;
  memberIds: string[];
  teamIds: string[];
}

export interface OrgSeedOptions {
  name: string;
  members: number;
  teams: number;
  plan?: Plan;
}

const DAY_MS = 86_400_000;

/**
 * An organization seeded through the stores (the same code paths the API uses, minus argon2 per
 * user): an owner, `members - 1` further members, and `teams` teams. Members are spread evenly
 * over the teams; the caller (an admin) is in every team, so GET /v1/org answers with all of
 * them. Sessions are real rows with hashed tokens, exactly as sign-in writes them.
 */
export async function seedOrganization(db: Kysely<DB>, options: OrgSeedOptions): Promise<SeededOrg> {
  // One argon2 hash shared by every seeded user: hashing 200 passwords would only slow the seed.
  const passwordHash = await hashPassword(randomSecret('pw'));
  const now = new Date();
  const expiresAt = new Date(now.getTime() + 30 * DAY_MS);
  const tag = newId('organization').slice(-8);

  const newUser = (label: string, at: Date) =>
    insertUser(db, { id: newId('user'), email: `${label}-${tag}@bench.test`, name: label, passwordHash, isPlatformAdmin: false, emailVerified: true, now: at });

  const owner = await newUser('owner', now);
  // Outside a request: the organization's creation is audited as the system.
  const created = await db.transaction().execute((trx) =>
    createOrganizationIn(trx, systemContext(systemClock), { name: options.name, plan: options.plan ?? 'enterprise', ownerUserId: owner.id, now }),
  );
  const organizationId = created.organization.id;
  const memberIds = [created.member.id];
  let callerMemberId = '';
  let callerUserId = '';
  for (let i = 1; i < options.members; i++) {
    const at = new Date(now.getTime() + i);
    const user = await newUser(`member${i}`, at);
    const id = newId('member');
    const role: Role = i === 1 ? 'admin' : 'member';
    await insertMember(db, { id, organizationId, userId: user.id, role, now: at });
    memberIds.push(id);
    if (i === 1) {
      callerMemberId = id;
      callerUserId = user.id;
    }
  }

  const teamIds: string[] = [];
  const teamRows = [];
  for (let t = 0; t < options.teams; t++) {
    const id = newId('team');
    teamIds.push(id);
    const at = new Date(now.getTime() + t);
    teamRows.push({ id, organization_id: organizationId, name: `Team ${t + 1}`, created_at: at, updated_at: at });
  }
  if (teamRows.length > 0) await db.insertInto('teams').values(teamRows).execute();
  const links: { team_id: string; member_id: string; organization_id: string; created_at: Date }[] = [];
  memberIds.forEach((memberId, i) => {
    if (memberId === callerMemberId || teamIds.length === 0) return;
    links.push({ team_id: teamIds[i % teamIds.length]!, member_id: memberId, organization_id: organizationId, created_at: now });
  });
  for (const teamId of teamIds) links.push({ team_id: teamId, member_id: callerMemberId, organization_id: organizationId, created_at: now });
  for (let i = 0; i < links.length; i += 1000) await db.insertInto('team_members').values(links.slice(i, i + 1000)).execute();

  const openSession = async (userId: string) => {
    const token = randomSecret('cps');
    await insertSession(db, { id: newId('session'), userId, tokenHash: sha256Hex(token), activeOrganizationId: organizationId, now, expiresAt, authMethod: 'password', secondFactor: null, ip: null, userAgent: null, ssoConnectionId: null });
    return token;
  };
  return {
    organizationId,
    ownerMemberId: created.member.id,
    ownerToken: await openSession(owner.id),
    callerToken: await openSession(callerUserId),
    callerMemberId,
    memberIds,
    teamIds,
  };
}
