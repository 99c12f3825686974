// Scenario 1's floor: what this machine can do for GET /v1/org. Node's own http server, no
// framework, a pg pool (max 10, as the service): hash the token, ONE prepared statement (the
// session, its member, user, directory user, organization, owner and the member's teams with their member counts,
// json-aggregated), JSON.stringify. Same body as the service. Everything the service spends above
// this is its overhead (routing, auth wiring, validation, logging, mapping).
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
pool.on('error', () => undefined);

const ORG = {
  name: 'bare_org_context',
  text: `SELECT o.id, o.name, o.plan, o.created_at, o.updated_at,
    m.id AS member_id, m.organization_id AS member_organization_id, m.user_id AS member_user_id, m.role AS member_role,
    m.created_at AS member_created_at, u.name AS user_name, u.email AS user_email, u.image AS user_image,
    (SELECT d.id FROM directory_users d WHERE d.member_id = m.id) AS directory_user_id,
    ow.id AS owner_member_id, owu.id AS owner_user_id, owu.name AS owner_name, owu.email AS owner_email, owu.image AS owner_image,
    (SELECT json_agg(json_build_object('id', t.id, 'name', t.name, 'memberCount', t.member_count,
        'createdAt', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY t.created_at, t.id)
      FROM team_members mine JOIN teams t ON t.id = mine.team_id
      WHERE mine.member_id = m.id AND t.organization_id = m.organization_id) AS teams
  FROM sessions s
  JOIN members m ON m.organization_id = s.active_organization_id AND m.user_id = s.user_id AND m.removed_at IS NULL AND m.suspended_at IS NULL
  JOIN users u ON u.id = m.user_id
  JOIN organizations o ON o.id = m.organization_id
  LEFT JOIN members ow ON ow.organization_id = m.organization_id AND ow.role = 'owner' AND ow.removed_at IS NULL
  LEFT JOIN users owu ON owu.id = ow.user_id
  WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()`,
};

function reply(res, status, body) {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

const server = createServer(async (req, res) => {
  try {
    if (req.url === '/health') return reply(res, 200, { status: 'ok' });
    if (req.method !== 'GET' || req.url !== '/v1/org') return reply(res, 404, { error: 'not_found' });
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!match) return reply(res, 401, { error: 'unauthorized' });
    const hash = createHash('sha256').update(match[1], 'utf8').digest('hex');
    const row = (await pool.query({ ...ORG, values: [hash] })).rows[0];
    if (!row) return reply(res, 401, { error: 'unauthorized' });
    reply(res, 200, {
      organization: {
        id: row.id,
        name: row.name,
        plan: row.plan,
        owner: row.owner_member_id ? { memberId: row.owner_member_id, userId: row.owner_user_id, name: row.owner_name, email: row.owner_email, image: row.owner_image } : null,
        createdAt: row.created_at.toISOString(),
        updatedAt: row.updated_at.toISOString(),
      },
      currentMember: {
        id: row.member_id,
        organizationId: row.member_organization_id,
        // A session belongs to a person, so its member is always of type user.
        type: 'user',
        userId: row.member_user_id,
        serviceAccountId: null,
        role: row.member_role,
        status: 'active',
        createdAt: row.member_created_at.toISOString(),
        user: { id: row.member_user_id, name: row.user_name, email: row.user_email, image: row.user_image },
        serviceAccount: null,
        directoryUserId: row.directory_user_id,
      },
      currentMemberTeams: row.teams ?? [],
    });
  } catch {
    reply(res, 500, { error: 'internal_error', message: 'An unexpected error occurred.' });
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 3102), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
