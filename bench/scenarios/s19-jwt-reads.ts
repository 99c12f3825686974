import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PERMISSION_KEYS } from '../../src/access/permissions';
import type { BenchContext } from '../lib/context';
import { cpuExtras, measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import { issuerOf, json, memberAccessToken } from '../lib/oauth-tokens';
import { ROOT, startProcess, type Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';
import { seedPeerOrganization } from '../peers/better-auth-seed';

const SIZES = [50, 1_000] as const;
const TEAMS = 20;
const CONNECTIONS = 32;
const ROUNDS = 4;
/** Both processes start cold: the first size's loads warm up this long, as scenario 1 does. */
const FIRST_WARMUP_SECONDS = 10;
const PEER_SCHEMA = 'better_auth';
const PEER_SECRET = 'bench-better-auth-secret-0123456789abcdefghijklmnop';
const RSS_LIMIT_MB = 180;

export const TARGETS = { jwtVsPeerFull: 5, jwtVsSession: 0.9, toolsListP50VsOrg: 3 } as const;

const TOOLS_LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/** The tools an MCP client (the SDK's own) is offered with this token: checked before the load, and the count printed. */
async function listedTools(service: Target, token: string): Promise<number> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  try {
    return (await client.listTools()).tools.length;
  } finally {
    await client.close();
  }
}

/**
 * Scenario 19: `/v1` reads with an OAuth access token (RFC 9068 JWT) against Better Auth's
 * `get-full-organization` with its bearer plugin (the session token in `Authorization`), and the
 * same request with a session token, at organizations of 50 and 1,000 members with 20 teams (the
 * caller, an admin, in all 20) on each side; at 50 members also MCP `tools/list` (JSON-RPC over
 * POST /mcp) for the same admin with a token for `/mcp` holding every permission, the
 * organization's MCP policy allowing writes, so every tool is listed. Alternating rounds.
 */
export async function scenarioJwtReads(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '19',
    title: 'GET /v1/org with a JWT vs session vs Better Auth get-full-organization (bearer plugin); MCP tools/list',
    setup: [
      `${CONNECTIONS} connections; each load warmed ${ctx.warmup} s (the first size's ${Math.max(ctx.warmup, FIRST_WARMUP_SECONDS)} s), then measured ${ctx.duration} s in ${ROUNDS} alternating rounds`,
      `organizations of ${SIZES.join(' and ')} members and ${TEAMS} teams on each side, the caller (an admin) in every team, seeded as scenario 13 seeds them; then ANALYZE`,
      "service JWT: the caller's, through an organization client, under an authorization row (the consent step's store), RS256 with the service's signing key (as scenario 16); for /mcp the same with every permission",
      'peer: the scenario-13 peer with its OAuth provider, JWT and bearer plugins (BETTER_AUTH_OAUTH=on); get-full-organization with `Authorization: Bearer <signed session token>`',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const targets: Target[] = [];
  try {
    const orgs = [];
    for (const members of SIZES) orgs.push(await seedOrganization(db, { name: `JWT bench ${members}`, members, teams: TEAMS }));
    const peer = await startProcess({
      name: 'better-auth-bearer',
      args: [path.join(ROOT, 'bench', 'peers', 'better-auth-server.mjs')],
      env: { DATABASE_URL: ctx.scratch.url, BETTER_AUTH_SECRET: PEER_SECRET, BETTER_AUTH_SCHEMA: PEER_SCHEMA, BETTER_AUTH_OAUTH: 'on' },
      logFile: path.join(ctx.logDir, 'better-auth-bearer.log'),
    });
    targets.push(peer);
    const peerOrgs = [];
    for (const members of SIZES) peerOrgs.push(await seedPeerOrganization(ctx.scratch.pool, { schema: PEER_SCHEMA, secret: PEER_SECRET, name: `JWT bench ${members}`, members, teams: TEAMS }));
    await ctx.scratch.analyze();
    const service = await ctx.startService('s19-service');
    targets.push(service);

    let first = true;
    for (const [index, members] of SIZES.entries()) {
      const org = orgs[index]!;
      const session = { authorization: `Bearer ${org.callerToken}` };
      const jwt = { authorization: `Bearer ${await memberAccessToken(ctx, service, org, { resource: `${issuerOf(service)}/v1`, scopes: ['members.read'] })}` };
      const peerBearer = { authorization: `Bearer ${decodeURIComponent(peerOrgs[index]!.callerCookie.split('=')[1]!)}` };

      // The answers before their speed: the same body for both of the service's credentials; the peer's organization with its teams.
      const bySession = JSON.stringify(await json(await fetch(`${service.url}/v1/org`, { headers: session }), 'GET /v1/org with the session'));
      const byJwt = JSON.stringify(await json(await fetch(`${service.url}/v1/org`, { headers: jwt }), 'GET /v1/org with the JWT'));
      if (bySession !== byJwt) throw new Error('GET /v1/org answers the JWT with another body than the session');
      const full = await fetch(`${peer.url}/api/auth/organization/get-full-organization`, { headers: peerBearer });
      const fullText = await full.text();
      const fullBody = JSON.parse(fullText) as { teams?: unknown[]; members?: unknown[] };
      if (full.status !== 200 || fullBody.teams?.length !== TEAMS) throw new Error(`peer get-full-organization with the bearer token answered ${full.status}`);
      result.notes.push(`${members} members: bodies GET /v1/org ${(byJwt.length / 1024).toFixed(1)} KB, peer get-full-organization ${(fullText.length / 1024).toFixed(1)} KB (${fullBody.members?.length} members)`);

      const warmup = first ? Math.max(ctx.warmup, FIRST_WARMUP_SECONDS) : ctx.warmup;
      first = false;
      const get = (label: string, target: Target, path: string, headers: Record<string, string>): LoadOptions => ({ label: `${label}, ${members} members`, url: target.url, path, headers, connections: CONNECTIONS, duration: ctx.duration, warmup, targets: [target] });
      const loads = [
        get('GET /v1/org (JWT)', service, '/v1/org', jwt),
        get('GET /v1/org (session)', service, '/v1/org', session),
        get('peer get-full-organization (bearer)', peer, '/api/auth/organization/get-full-organization', peerBearer),
      ];
      if (index === 0) {
        await json(await fetch(`${service.url}/v1/org/mcp-policy`, { method: 'PUT', headers: { ...session, 'content-type': 'application/json' }, body: JSON.stringify({ enabled: true, writes: true }) }), 'MCP policy');
        const mcp = { authorization: `Bearer ${await memberAccessToken(ctx, service, org, { resource: `${issuerOf(service)}/mcp`, scopes: [...PERMISSION_KEYS] })}`, ...MCP_HEADERS };
        const raw = await fetch(`${service.url}/mcp`, { method: 'POST', headers: mcp, body: TOOLS_LIST });
        const rawText = await raw.text();
        if (raw.status !== 200) throw new Error(`POST /mcp tools/list answered ${raw.status}: ${rawText.slice(0, 300)}`);
        result.notes.push(`MCP tools/list for the admin lists ${await listedTools(service, mcp.authorization.slice(7))} tools (the SDK's client); the answer is ${(rawText.length / 1024).toFixed(0)} KB`);
        loads.push({ ...get('POST /mcp tools/list', service, '/mcp', mcp), method: 'POST', body: TOOLS_LIST });
      }
      const rows: Measurement[] = await measureRounds(loads, ROUNDS);
      for (const m of rows) m.extra = cpuExtras(m);
      result.rows.push(...rows);
      const [byToken, bySessionRow, peerFull, toolsList] = rows as [Measurement, Measurement, Measurement, Measurement | undefined];
      const ratio = (a: Measurement, b: Measurement) => (a.requests > 0 && b.requests > 0 ? a.rps / b.rps : NaN);
      result.checks.push(
        check(`${members} members: GET /v1/org with a JWT ÷ peer get-full-organization (bearer), req/s`, ratio(byToken, peerFull), '>=', TARGETS.jwtVsPeerFull),
        check(`${members} members: GET /v1/org with a JWT ÷ with a session, req/s`, ratio(byToken, bySessionRow), '>=', TARGETS.jwtVsSession),
      );
      if (toolsList) result.checks.push(check(`${members} members: tools/list p50 ÷ GET /v1/org (JWT) p50`, toolsList.p50 / byToken.p50, '<=', TARGETS.toolsListP50VsOrg));
      result.checks.push(
        check(`${members} members: service peak RSS (MB)`, Math.max(...rows.filter((m) => !m.label.startsWith('peer')).map((m) => m.peakRssMb ?? NaN)), '<=', RSS_LIMIT_MB),
        check(`${members} members: errors + non-2xx, every load`, rows.reduce((sum, m) => sum + m.errors + m.non2xx, 0), '<=', 0),
      );
      for (const m of rows) if (m.non2xx > 0) result.notes.push(`${m.label}: status codes ${JSON.stringify(m.statusCodes)}`);
    }
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
