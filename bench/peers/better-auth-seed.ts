import { createHash, createHmac, randomBytes } from 'node:crypto';
import type pg from 'pg';

/**
 * Scenario 13's peer data, written straight into Better Auth's tables (created by its own
 * migration in `schema`, see better-auth-server.mjs) the way its adapter writes them: the same
 * shape as bench/seed/org.ts gives the service. An owner, `members - 1` further members (the
 * second an admin: the caller), `teams` teams with their memberCount, members spread evenly over
 * the teams and the caller in every team, and one session of the caller with that organization
 * active. Better Auth keeps session tokens in the clear and accepts them from its session cookie,
 * signed with its secret (HMAC-SHA256, base64, as its cookie code signs them), which this returns
 * ready to send.
 */
export interface PeerOrg {
  organizationId: string;
  /** `cookie` header value carrying the caller's signed session token. */
  callerCookie: string;
  callerUserId: string;
  teamIds: string[];
}

export interface PeerSeedOptions {
  schema: string;
  /** Better Auth's secret (BETTER_AUTH_SECRET of the peer process). */
  secret: string;
  name: string;
  members: number;
  teams: number;
}

const DAY_MS = 86_400_000;
const CHUNK = 1000;
/** Better Auth's ids are 32 random characters. */
const id = () => randomBytes(16).toString('hex');

/** Better Auth's teamMember.membershipKey: base64url, unpadded, of SHA-256 over JSON [teamId, userId]. */
function membershipKey(teamId: string, userId: string): string {
  return createHash('sha256').update(JSON.stringify([teamId, userId])).digest('base64url');
}

/** The session cookie Better Auth's handler accepts: `<token>.<base64 HMAC-SHA256(secret, token)>`, URI-encoded. */
export function sessionCookie(token: string, secret: string): string {
  const signature = createHmac('sha256', secret).update(token).digest('base64');
  return `better-auth.session_token=${encodeURIComponent(`${token}.${signature}`)}`;
}

/** Inserts rows into a qualified table, column by column through unnest, CHUNK at a time. */
async function insert(pool: pg.Pool, table: string, columns: [name: string, type: string][], rows: unknown[][]): Promise<void> {
  const names = columns.map(([name]) => `"${name}"`).join(', ');
  const params = columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
  for (let start = 0; start < rows.length; start += CHUNK) {
    const chunk = rows.slice(start, start + CHUNK);
    await pool.query(
      `INSERT INTO ${table} (${names}) SELECT * FROM unnest(${params})`,
      columns.map((_, i) => chunk.map((row) => row[i])),
    );
  }
}

export async function seedPeerOrganization(pool: pg.Pool, options: PeerSeedOptions): Promise<PeerOrg> {
  const { schema } = options;
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`not a plain schema name: ${schema}`);
  const q = (table: string) => `${schema}."${table}"`;
  const now = new Date();
  const tag = id().slice(0, 8);
  const organizationId = id();
  await pool.query(`INSERT INTO ${q('organization')} (id, name, slug, "createdAt") VALUES ($1, $2, $3, $4)`, [organizationId, options.name, `${options.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${tag}`, now]);

  const users: unknown[][] = [];
  const members: unknown[][] = [];
  const userIds: string[] = [];
  for (let i = 0; i < options.members; i++) {
    const at = new Date(now.getTime() + i);
    const userId = id();
    const label = i === 0 ? 'owner' : `member${i}`;
    users.push([userId, label, `${label}-${tag}@bench.test`, true, at, at]);
    members.push([id(), organizationId, userId, i === 0 ? 'owner' : i === 1 ? 'admin' : 'member', at]);
    userIds.push(userId);
  }
  await insert(pool, q('user'), [['id', 'text'], ['name', 'text'], ['email', 'text'], ['emailVerified', 'boolean'], ['createdAt', 'timestamptz'], ['updatedAt', 'timestamptz']], users);
  await insert(pool, q('member'), [['id', 'text'], ['organizationId', 'text'], ['userId', 'text'], ['role', 'text'], ['createdAt', 'timestamptz']], members);

  const callerUserId = userIds[1]!;
  const teamIds = Array.from({ length: options.teams }, id);
  const links: unknown[][] = [];
  const counts = new Map<string, number>();
  const link = (teamId: string, userId: string) => {
    links.push([id(), teamId, userId, membershipKey(teamId, userId), now]);
    counts.set(teamId, (counts.get(teamId) ?? 0) + 1);
  };
  userIds.forEach((userId, i) => {
    if (userId !== callerUserId && teamIds.length > 0) link(teamIds[i % teamIds.length]!, userId);
  });
  for (const teamId of teamIds) link(teamId, callerUserId);
  const teams = teamIds.map((teamId, t) => {
    const at = new Date(now.getTime() + t);
    return [teamId, `Team ${t + 1}`, counts.get(teamId) ?? 0, organizationId, at, at];
  });
  await insert(pool, q('team'), [['id', 'text'], ['name', 'text'], ['memberCount', 'int4'], ['organizationId', 'text'], ['createdAt', 'timestamptz'], ['updatedAt', 'timestamptz']], teams);
  await insert(pool, q('teamMember'), [['id', 'text'], ['teamId', 'text'], ['userId', 'text'], ['membershipKey', 'text'], ['createdAt', 'timestamptz']], links);

  // Better Auth's default session: 7 days, refreshed once a day; a fresh one is never refreshed.
  const token = id();
  await pool.query(
    `INSERT INTO ${q('session')} (id, "expiresAt", token, "createdAt", "updatedAt", "userId", "activeOrganizationId") VALUES ($1, $2, $3, $4, $4, $5, $6)`,
    [id(), new Date(now.getTime() + 7 * DAY_MS), token, now, callerUserId, organizationId],
  );
  return { organizationId, callerCookie: sessionCookie(token, options.secret), callerUserId, teamIds };
}
