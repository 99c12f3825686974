// Scenario 1's baseline: GET /v1/org written the straightforward way with Express and pg, doing
// the same database work as the service without its contract layer (no openapi-backend, no AJV,
// no security handlers, no request logging, no helmet): hash the token, then four queries in
// sequence — session, member + organization, owner, teams. The ratio service / baseline is what
// the contract layer, validation, auth wiring and logging cost.
import { createHash } from 'node:crypto';
import express from 'express';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on('error', () => undefined);

const SESSION = `SELECT id, user_id, active_organization_id FROM sessions
  WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()`;
const MEMBER = `SELECT m.id, m.organization_id, m.user_id, m.role, m.created_at, u.name, u.email, u.image,
    (SELECT d.id FROM directory_users d WHERE d.member_id = m.id) AS directory_user_id,
    o.id AS org_id, o.name AS org_name, o.plan, o.created_at AS org_created_at, o.updated_at AS org_updated_at
  FROM members m JOIN users u ON u.id = m.user_id JOIN organizations o ON o.id = m.organization_id
  WHERE m.organization_id = $1 AND m.user_id = $2 AND m.removed_at IS NULL AND m.suspended_at IS NULL`;
const OWNER = `SELECT m.id AS member_id, u.id AS user_id, u.name, u.email, u.image
  FROM members m JOIN users u ON u.id = m.user_id
  WHERE m.organization_id = $1 AND m.role = 'owner' AND m.removed_at IS NULL`;
const TEAMS = `SELECT t.id, t.name, t.created_at, t.member_count
  FROM teams t JOIN team_members mine ON mine.team_id = t.id AND mine.member_id = $2
  WHERE t.organization_id = $1 ORDER BY t.created_at, t.id`;

const app = express();
app.disable('x-powered-by');
app.get('/health', (_req, res) => res.json({ status: 'ok' }));
app.get('/v1/org', async (req, res) => {
  try {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!match) return res.status(401).json({ error: 'unauthorized' });
    const hash = createHash('sha256').update(match[1], 'utf8').digest('hex');
    const session = (await pool.query(SESSION, [hash])).rows[0];
    if (!session) return res.status(401).json({ error: 'unauthorized' });
    const member = (await pool.query(MEMBER, [session.active_organization_id, session.user_id])).rows[0];
    if (!member) return res.status(404).json({ error: 'organization_not_found', message: 'The organization could not be found.' });
    const owner = (await pool.query(OWNER, [member.organization_id])).rows[0];
    const teams = (await pool.query(TEAMS, [member.organization_id, member.id])).rows;
    res.json({
      organization: {
        id: member.org_id,
        name: member.org_name,
        plan: member.plan,
        owner: owner ? { memberId: owner.member_id, userId: owner.user_id, name: owner.name, email: owner.email, image: owner.image } : null,
        createdAt: member.org_created_at.toISOString(),
        updatedAt: member.org_updated_at.toISOString(),
      },
      currentMember: {
        id: member.id,
        organizationId: member.organization_id,
        // A session belongs to a person, so its member is always of type user.
        type: 'user',
        userId: member.user_id,
        serviceAccountId: null,
        role: member.role,
        status: 'active',
        createdAt: member.created_at.toISOString(),
        user: { id: member.user_id, name: member.name, email: member.email, image: member.image },
        serviceAccount: null,
        directoryUserId: member.directory_user_id,
      },
      currentMemberTeams: teams.map((t) => ({ id: t.id, name: t.name, memberCount: t.member_count, createdAt: t.created_at.toISOString() })),
    });
  } catch {
    res.status(500).json({ error: 'internal_error', message: 'An unexpected error occurred.' });
  }
});

const server = app.listen(Number(process.env.PORT ?? 3101), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
