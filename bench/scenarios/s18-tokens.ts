import path from 'node:path';
import type { BenchContext } from '../lib/context';
import { cpuExtras, measureRounds, type LoadOptions, type LoopLoad, type Measurement } from '../lib/load';
import { basicAuth, issuerOf, json, refreshTokens, workerDelegation } from '../lib/oauth-tokens';
import { ROOT, startProcess, type Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';
import { seedPeerOrganization } from '../peers/better-auth-seed';

const CONNECTIONS = 32;
const ROUNDS = 4;
/** Every target starts cold: a fresh process needs several seconds of load before it settles (scenario 1). */
const WARMUP_SECONDS = 10;
/** Refresh tokens per side: one chain per connection, and spares for a chain a failed answer ends. */
const CHAINS = CONNECTIONS + 8;
const PEER_SCHEMA = 'better_auth';
const PEER_SECRET = 'bench-better-auth-secret-0123456789abcdefghijklmnop';
const PEER_TOKEN_PATH = '/api/auth/oauth2/token';
const FORM = 'application/x-www-form-urlencoded';
const RSS_LIMIT_MB = 180;

export const TARGETS = { clientCredentialsVsPeer: 2, clientCredentialsVsBare: 0.8, refreshVsPeer: 2, exchangeVsClientCredentials: 0.8 } as const;

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/**
 * A refresh-token rotation load: `CONNECTIONS` loops, each request taking a live refresh token
 * from the pool and putting back the new one its answer carries, so every request rotates a token
 * no request used before and the chains go on across rounds. A loop of HTTP requests (fetch, kept-
 * alive connections) rather than autocannon: autocannon builds requests it never sends and drops
 * the answers in flight when a round ends, and a rotated token sent again is reuse, which both
 * sides answer by revoking the token's whole family.
 */
function rotation(label: string, target: Target, tokenPath: string, clientId: string, resource: string, pool: string[], warmup: number, duration: number): LoopLoad {
  const work = async () => {
    const token = pool.shift();
    if (!token) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw new Error('no live refresh token left');
    }
    const res = await fetch(`${target.url}${tokenPath}`, { method: 'POST', headers: { 'content-type': FORM }, body: form({ grant_type: 'refresh_token', client_id: clientId, refresh_token: token, resource }) });
    const body = (await res.json()) as { refresh_token?: string };
    if (res.status !== 200 || !body.refresh_token) throw new Error(`refresh answered ${res.status}`);
    pool.push(body.refresh_token);
  };
  return { label, concurrency: CONNECTIONS, work, duration, warmup, targets: [target] };
}

/** One token answer checked before its speed is measured: 200 with a JWT access token. */
async function probe(target: Target, tokenPath: string, headers: Record<string, string>, body: string, what: string): Promise<Record<string, unknown>> {
  const answer = await json(await fetch(`${target.url}${tokenPath}`, { method: 'POST', headers, body }), what);
  if (typeof answer.access_token !== 'string' || answer.access_token.split('.').length !== 3) throw new Error(`${what}: no JWT access token in ${JSON.stringify(answer)}`);
  return answer;
}

/**
 * Scenario 18: the token endpoint, the service against Better Auth 1.7's OAuth provider
 * (@better-auth/oauth-provider on the scenario-13 peer, same Postgres) and bare oidc-provider in
 * memory, in alternating rounds: client_credentials (a service account; the peer's M2M client;
 * bare oidc-provider's static client), the service's token exchange (a worker exchanging a
 * member's delegation), then refresh-token rotation (the service's tokens from the
 * authorization-code flow, the peer's written through its adapter). Every request names the
 * resource, so every side issues an RS256 JWT access token.
 */
export async function scenarioTokens(ctx: BenchContext): Promise<ScenarioResult> {
  const warmup = ctx.smoke ? ctx.warmup : Math.max(ctx.warmup, WARMUP_SECONDS);
  const result: ScenarioResult = {
    id: '18',
    title: 'POST /oauth/token: service vs Better Auth oauth-provider vs bare oidc-provider (client_credentials, token exchange, refresh rotation)',
    setup: [
      `${CONNECTIONS} connections; each target warmed up ${warmup} s, then measured ${ctx.duration} s in ${ROUNDS} alternating rounds (one target loaded at a time)`,
      'organizations of 50 members on each side; every request names the resource (RFC 8707) and gets an RS256 JWT access token',
      'service: client_credentials of a service account (client_secret_basic, scope teams.read); token exchange by a worker (its host token as secret) of a delegation of the caller; refresh tokens of a public organization client from the authorization-code + PKCE flow (openid-client, hosted pages)',
      "peer: better-auth + @better-auth/oauth-provider (pinned devDependencies; peers/better-auth-oauth.mjs): rate limits off, clientPrivileges granting client-credentials scopes, one resource linked to its clients, the JWT plugin signing RS256; its M2M client made by its admin API, its refresh tokens (public client) written through its adapter",
      'bare-oidc-provider: baselines/oidc-client-credentials.mjs (in-memory adapter, one static client, same claims), as scenario 17',
      `refresh rotation: ${CONNECTIONS} loops of fetch (kept-alive connections) per side over ${CHAINS} chains, each answer's refresh token the chain's next request; a failed answer counts as an error`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const targets: Target[] = [];
  try {
    const org = await seedOrganization(ctx.scratch.database.db, { name: 'Bench tokens', members: 50, teams: 5 });
    const peer = await startProcess({
      name: 'better-auth-oauth',
      args: [path.join(ROOT, 'bench', 'peers', 'better-auth-server.mjs')],
      env: { DATABASE_URL: ctx.scratch.url, BETTER_AUTH_SECRET: PEER_SECRET, BETTER_AUTH_SCHEMA: PEER_SCHEMA, BETTER_AUTH_OAUTH: 'on' },
      logFile: path.join(ctx.logDir, 'better-auth-oauth.log'),
    });
    targets.push(peer);
    const peerOrg = await seedPeerOrganization(ctx.scratch.pool, { schema: PEER_SCHEMA, secret: PEER_SECRET, name: 'Bench tokens', members: 50, teams: 5 });
    const peerSetup = await json(
      await fetch(`${peer.url}/bench/oauth-setup`, { method: 'POST', headers: { cookie: peerOrg.callerCookie }, body: JSON.stringify({ userId: peerOrg.callerUserId, refreshTokens: CHAINS }) }),
      'peer OAuth set-up',
    );
    const peerM2m = peerSetup.m2m as { clientId: string; clientSecret: string };
    const peerResource = peerSetup.resource as string;
    await ctx.scratch.analyze();

    const service = await ctx.startService('s18-service');
    targets.push(service);
    const session = { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' };
    const account = await json(await fetch(`${service.url}/v1/service-accounts`, { method: 'POST', headers: session, body: JSON.stringify({ name: 'Bench robot', role: 'member' }) }), 'create the service account');
    const accountId = (account.item as { id: string }).id;
    const secret = (await json(await fetch(`${service.url}/v1/service-accounts/${accountId}/secrets`, { method: 'POST', headers: session, body: '{}' }), 'create its secret')).clientSecret as string;
    const worker = await workerDelegation(service, org, ['members.read', 'teams.read']);
    const refresh = await refreshTokens(ctx, service, org, CHAINS);
    const bare = await ctx.startBaseline('oidc-client-credentials.mjs', { BENCH_CLIENT_ID: accountId, BENCH_CLIENT_SECRET: secret, BENCH_SCOPES: 'teams.read' });
    targets.push(bare);
    const ourResource = refresh.resource;

    const cc = (label: string, target: Target, tokenPath: string, id: string, clientSecret: string, resource: string) => ({
      label,
      target,
      tokenPath,
      headers: { authorization: basicAuth(id, clientSecret), 'content-type': FORM },
      body: form({ grant_type: 'client_credentials', scope: 'teams.read', resource }),
    });
    const grants = [
      cc('service client_credentials', service, '/oauth/token', accountId, secret, ourResource),
      cc('peer client_credentials', peer, PEER_TOKEN_PATH, peerM2m.clientId, peerM2m.clientSecret, peerResource),
      cc('bare-oidc-provider client_credentials', bare, '/oauth/token', accountId, secret, `${issuerOf(bare)}/v1`),
      {
        label: 'service token exchange',
        target: service,
        tokenPath: '/oauth/token',
        headers: { authorization: basicAuth(worker.workerId, worker.hostToken), 'content-type': FORM },
        body: form({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: worker.subjectToken, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', resource: ourResource }),
      },
    ];
    for (const g of grants) await probe(g.target, g.tokenPath, g.headers, g.body, g.label);
    const rows: Record<string, Measurement> = {};
    const run = async (loads: (LoadOptions | LoopLoad)[]) => {
      for (const m of await measureRounds(loads, ROUNDS)) {
        m.extra = cpuExtras(m);
        rows[m.label] = m;
        result.rows.push(m);
      }
    };
    await run(grants.map((g) => ({ label: g.label, url: g.target.url, path: g.tokenPath, method: 'POST', headers: g.headers, body: g.body, connections: CONNECTIONS, duration: ctx.duration, warmup, targets: [g.target] })));

    const ourPool = [...refresh.tokens];
    const peerPool = [...(peerSetup.refreshTokens as string[])];
    const first = (await probe(service, '/oauth/token', { 'content-type': FORM }, form({ grant_type: 'refresh_token', client_id: refresh.clientId, refresh_token: ourPool.shift()!, resource: ourResource }), 'service refresh')).refresh_token;
    const theirs = (await probe(peer, PEER_TOKEN_PATH, { 'content-type': FORM }, form({ grant_type: 'refresh_token', client_id: peerSetup.publicClientId as string, refresh_token: peerPool.shift()!, resource: peerResource }), 'peer refresh')).refresh_token;
    if (typeof first !== 'string' || typeof theirs !== 'string') throw new Error('a refresh answer carried no new refresh token (no rotation)');
    ourPool.push(first);
    peerPool.push(theirs);
    await run([
      rotation('service refresh_token rotation', service, '/oauth/token', refresh.clientId, ourResource, ourPool, warmup, ctx.duration),
      rotation('peer refresh_token rotation', peer, PEER_TOKEN_PATH, peerSetup.publicClientId as string, peerResource, peerPool, warmup, ctx.duration),
    ]);
    result.notes.push(`refresh chains still live at the end: service ${ourPool.length}, peer ${peerPool.length} (of ${CHAINS}; a chain ends only on a failed answer)`);

    const ratio = (a: string, b: string) => (rows[a]!.requests > 0 && rows[b]!.requests > 0 ? rows[a]!.rps / rows[b]!.rps : NaN);
    const ours = Object.values(rows).filter((m) => m.label.startsWith('service'));
    result.checks.push(
      check('client_credentials tokens/s, service ÷ Better Auth oauth-provider', ratio('service client_credentials', 'peer client_credentials'), '>=', TARGETS.clientCredentialsVsPeer),
      check('client_credentials tokens/s, service ÷ bare oidc-provider', ratio('service client_credentials', 'bare-oidc-provider client_credentials'), '>=', TARGETS.clientCredentialsVsBare),
      check('token exchange ÷ client_credentials (service)', ratio('service token exchange', 'service client_credentials'), '>=', TARGETS.exchangeVsClientCredentials),
      check('refresh rotations/s, service ÷ Better Auth oauth-provider', ratio('service refresh_token rotation', 'peer refresh_token rotation'), '>=', TARGETS.refreshVsPeer),
      check('service peak RSS (MB)', Math.max(...ours.map((m) => m.peakRssMb ?? NaN)), '<=', RSS_LIMIT_MB),
      check('errors + non-2xx, every target', Object.values(rows).reduce((sum, m) => sum + m.errors + m.non2xx, 0), '<=', 0),
    );
    for (const m of Object.values(rows)) if (m.non2xx > 0) result.notes.push(`${m.label}: status codes ${JSON.stringify(m.statusCodes)}`);
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
