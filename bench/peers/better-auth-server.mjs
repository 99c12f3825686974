// Scenario 13's peer: Better Auth (the pinned devDependency) with its organization plugin, teams
// on, on its documented Postgres set-up (a pg Pool as `database`), served by its own Node handler.
// Defaults everywhere except:
// - membershipLimit and invitationLimit, large enough for a 1,000-member organization and for the
//   invitations the bench writes (the defaults, 100 each, refuse the 101st);
// - the rate limiter (on by default in production: 100 requests per 10 s per address) is off, as
//   the bench sends thousands a second from one address; it only makes the peer faster.
// No sendInvitationEmail hook: its invite-member writes the invitation row and sends nothing.
// Its tables live in their own schema (BETTER_AUTH_SCHEMA, through the pool's search_path) of the
// bench's scratch database, created at start-up by its own migration API (getMigrations).
// ESM-only like Better Auth itself: started as its own process, never imported by the service or
// the tests. Env: DATABASE_URL, PORT, BETTER_AUTH_SECRET, BETTER_AUTH_SCHEMA (default better_auth),
// BETTER_AUTH_OAUTH=on (scenarios 18 and 19: its OAuth provider, JWT and bearer plugins as well,
// better-auth-oauth.mjs; off, scenario 13's peer is the organization plugin alone).
import { createServer } from 'node:http';
import pg from 'pg';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { toNodeHandler } from 'better-auth/node';
import { organization } from 'better-auth/plugins';
import { oauthPlugins, setupRoute } from './better-auth-oauth.mjs';

const port = Number(process.env.PORT ?? 3013);
const schema = process.env.BETTER_AUTH_SCHEMA ?? 'better_auth';
if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`BETTER_AUTH_SCHEMA must be a plain identifier: ${schema}`);

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, options: `-c search_path=${schema}` });
await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);

const baseURL = `http://127.0.0.1:${port}`;
const withOAuth = process.env.BETTER_AUTH_OAUTH === 'on';
const options = {
  baseURL,
  secret: process.env.BETTER_AUTH_SECRET,
  database: pool,
  rateLimit: { enabled: false },
  plugins: [organization({ teams: { enabled: true }, membershipLimit: 10_000, invitationLimit: 100_000 }), ...(withOAuth ? oauthPlugins(baseURL) : [])],
};

const { runMigrations } = await getMigrations(options);
await runMigrations();

const auth = betterAuth(options);
const handler = toNodeHandler(auth);
const setup = withOAuth ? setupRoute(auth, baseURL) : null;
const server = createServer((req, res) => {
  if (req.url === '/health') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"ok"}');
    return;
  }
  if (setup && req.method === 'POST' && req.url === '/bench/oauth-setup') return void setup(req, res);
  void handler(req, res);
});
server.listen(port, '127.0.0.1');

const stop = () => server.close(() => void pool.end().finally(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
