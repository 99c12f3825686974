import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT, type JWK } from 'jose';
import { SecretBox } from '../../src/lib/crypto';
import { newId } from '../../src/lib/ids';
import { signingKeys } from '../../src/oauth/keys';
import { insert as insertAuthorization } from '../../src/authorizations/store';
import { SECRET_KEY, type BenchContext } from '../lib/context';
import { cpuExtras, measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import type { Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization, type OrgSeedOptions, type SeededOrg } from '../seed/org';

const CONNECTIONS = 32;
const ROUNDS = 4;
/** As scenario 1: a fresh service process needs several seconds of load before it settles. */
const WARMUP_SECONDS = 10;

async function json(res: Response, what: string): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${what}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** The start both scenarios share: the warm-up, a seeded organization (then ANALYZE) and the result to fill. */
async function prepare(ctx: BenchContext, seed: OrgSeedOptions, head: { id: string; title: string; setup: (warmup: number) => string[] }): Promise<{ warmup: number; org: SeededOrg; result: ScenarioResult }> {
  const warmup = ctx.smoke ? ctx.warmup : Math.max(ctx.warmup, WARMUP_SECONDS);
  const org = await seedOrganization(ctx.scratch.database.db, seed);
  await ctx.scratch.analyze();
  return { warmup, org, result: { id: head.id, title: head.title, setup: head.setup(warmup), rows: [], checks: [], notes: [] } };
}

/** The loads measured in alternating rounds, each row with its CPU figures, added to the result; the rows by label. */
async function measure(result: ScenarioResult, loads: LoadOptions[]): Promise<Record<string, Measurement>> {
  const rows: Record<string, Measurement> = {};
  for (const m of await measureRounds(loads, ROUNDS)) rows[m.label] = m;
  for (const m of Object.values(rows)) m.extra = { ...m.extra, ...cpuExtras(m) };
  result.rows.push(...Object.values(rows));
  return rows;
}

/**
 * Scenario 16: GET /v1/org with an OAuth access token (RFC 9068 JWT) against the same request with
 * a session token, same caller, same process, alternating rounds. The token is a person's token
 * through an organization client: the client registered through the API, the member's
 * authorization written with the store the consent step uses, the JWT signed with the service's
 * own signing key (as its authorization server signs one). What the token path adds: the JWT's
 * signature check and its one principal statement instead of the session's.
 */
export async function scenarioAccessToken(ctx: BenchContext): Promise<ScenarioResult> {
  const { warmup, org, result } = await prepare(ctx, { name: 'Bench Org tokens', members: 50, teams: 20 }, {
    id: '16',
    title: 'GET /v1/org (access token vs session token)',
    setup: (warmup) => [
      `${CONNECTIONS} connections; warmed up ${warmup} s per load, then measured ${ctx.duration} s in ${ROUNDS} alternating rounds; one service process, the two loads differ only in the Authorization header`,
      'organization of 50 members and 20 teams seeded through the stores, then ANALYZE; the caller (an admin) is in all 20 teams',
      "access token: the caller's, through an organization client registered with POST /v1/oauth-clients, under an authorization row (the consent step's store), RS256-signed with the service's signing key, 1 h lifetime",
    ],
  });
  let service: Target | undefined;
  try {
    service = await ctx.startService('s16-service');
    const base = `http://localhost:${service.port}`;
    const session = { authorization: `Bearer ${org.callerToken}` };
    const client = await json(
      await fetch(`${service.url}/v1/oauth-clients`, {
        method: 'POST',
        headers: { ...session, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Bench dashboard', type: 'public', redirectUris: ['http://127.0.0.1/cb'], scopes: ['members.read'] }),
      }),
      'register the client',
    );
    const clientId = (client.item as { id: string }).id;
    // The service makes its signing key on first use: ask for the JWKS so it exists before it is read here.
    await json(await fetch(`${service.url}/oauth/jwks`), 'JWKS');
    const db = ctx.scratch.database.db;
    const now = new Date();
    const authorization = await insertAuthorization(
      db,
      { id: newId('oauthAuthorization'), organizationId: org.organizationId, memberId: org.callerMemberId, clientId, clientType: 'organization', clientName: 'Bench dashboard', scopes: ['members.read'], resource: `${base}/v1`, grantKey: null, expiresAt: new Date(now.getTime() + 86_400_000) },
      now,
    );
    const jwk = (await signingKeys(db, new SecretBox(SECRET_KEY), now)).jwks[0]!;
    const seconds = Math.floor(now.getTime() / 1000);
    const token = await new SignJWT({ client_id: clientId, scope: 'members.read', org_id: org.organizationId, authorization_id: authorization.id })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid })
      .setIssuer(base)
      .setAudience(`${base}/v1`)
      .setSubject(org.callerMemberId)
      .setJti(randomUUID())
      .setIssuedAt(seconds)
      .setExpirationTime(seconds + 3600)
      .sign(await importJWK(jwk as JWK, 'RS256'));
    const bearer = { authorization: `Bearer ${token}` };

    // The same caller, so the same answer: compared before the speed is.
    const bySession = JSON.stringify(await json(await fetch(`${service.url}/v1/org`, { headers: session }), 'GET /v1/org with the session'));
    const byToken = JSON.stringify(await json(await fetch(`${service.url}/v1/org`, { headers: bearer }), 'GET /v1/org with the access token'));
    if (bySession !== byToken) throw new Error(`GET /v1/org answers the access token with another body than the session: ${byToken} vs ${bySession}`);

    const load = (label: string, headers: Record<string, string>): LoadOptions => ({ label, url: service!.url, path: '/v1/org', headers, connections: CONNECTIONS, duration: ctx.duration, warmup, targets: [service!] });
    const rows = await measure(result, [load('session token', session), load('access token', bearer)]);
    const bySessionRow = rows['session token']!;
    const byTokenRow = rows['access token']!;
    result.checks.push(
      check('throughput access token / session token', byTokenRow.rps / bySessionRow.rps, '>=', 0.9),
      check('p99 access token / session token', byTokenRow.p99 / bySessionRow.p99, '<=', 1.2),
      check('errors + non-2xx (both loads)', byTokenRow.errors + byTokenRow.non2xx + bySessionRow.errors + bySessionRow.non2xx, '<=', 0),
    );
  } finally {
    await service?.stop();
  }
  return result;
}

/**
 * Scenario 17: client_credentials token requests per second, the service's authorization server
 * (a service account: its client read from the database, its secret checked against the stored
 * hash, the provider behind the service's front) against bare oidc-provider on the same machine
 * serving the same grant with its in-memory adapter and a static client
 * (bench/baselines/oidc-client-credentials.mjs). Same client_secret_basic request, same RS256 JWT
 * access token (resource `<issuer>/v1`, the same claims).
 */
export async function scenarioClientCredentials(ctx: BenchContext): Promise<ScenarioResult> {
  const { warmup, org, result } = await prepare(ctx, { name: 'Bench Org robots', members: 5, teams: 1 }, {
    id: '17',
    title: 'POST /oauth/token client_credentials (service vs bare oidc-provider)',
    setup: (warmup) => [
      `${CONNECTIONS} connections; each target warmed up ${warmup} s, then measured ${ctx.duration} s in ${ROUNDS} alternating rounds (one target loaded at a time)`,
      'service: a service account (POST /v1/service-accounts) and its client secret; client_secret_basic, scope teams.read',
      'bare-oidc-provider: oidc-provider alone (node:http, in-memory adapter, one static client with the same id and secret, the same resource and JWT claims)',
    ],
  });
  const targets: Record<string, Target> = {};
  try {
    const service = await ctx.startService('s17-service');
    targets['service'] = service;
    const session = { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' };
    const account = await json(await fetch(`${service.url}/v1/service-accounts`, { method: 'POST', headers: session, body: JSON.stringify({ name: 'Bench robot', role: 'member' }) }), 'create the service account');
    const clientId = (account.item as { id: string }).id;
    const secret = await json(await fetch(`${service.url}/v1/service-accounts/${clientId}/secrets`, { method: 'POST', headers: session, body: '{}' }), 'create its secret');
    const clientSecret = secret.clientSecret as string;
    targets['bare-oidc-provider'] = await ctx.startBaseline('oidc-client-credentials.mjs', { BENCH_CLIENT_ID: clientId, BENCH_CLIENT_SECRET: clientSecret, BENCH_SCOPES: 'teams.read' });

    const headers = {
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    };
    const body = 'grant_type=client_credentials&scope=teams.read';
    const loads: LoadOptions[] = [];
    for (const [label, target] of Object.entries(targets)) {
      // Both answer the grant before their speed is compared.
      const token = await json(await fetch(`${target.url}/oauth/token`, { method: 'POST', headers, body }), `${label}: token request`);
      if (typeof token.access_token !== 'string' || token.scope !== 'teams.read') throw new Error(`${label}: token answer ${JSON.stringify(token)}`);
      loads.push({ label, url: target.url, path: '/oauth/token', method: 'POST', headers, body, connections: CONNECTIONS, duration: ctx.duration, warmup, targets: [target] });
    }
    const rows = await measure(result, loads);
    const ours = rows['service']!;
    const bare = rows['bare-oidc-provider']!;
    result.checks.push(
      check('token requests/s service / bare oidc-provider', ours.rps / bare.rps, '>=', 0.8),
      check('service errors + non-2xx', ours.errors + ours.non2xx, '<=', 0),
    );
  } finally {
    await Promise.all(Object.values(targets).map((t) => t.stop()));
  }
  return result;
}
