import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { BenchContext } from '../lib/context';
import { cpuExtras, measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import { ROOT, startProcess, type Target } from '../lib/procs';
import { check, type Check, type ScenarioResult } from '../lib/report';
import { seedOrganization, type SeededOrg } from '../seed/org';
import { seedPeerOrganization, type PeerOrg } from '../peers/better-auth-seed';

const SIZES = [50, 1_000] as const;
const TEAMS = 20;
const PAGE = 100;
const READ_CONNECTIONS = 32;
const WRITE_CONNECTIONS = 4;
const ROUNDS = 4;
/** Both processes start cold: the first pair at the first size warms them up this long (seconds, at least --warmup), as scenario 1 does. */
const FIRST_WARMUP_SECONDS = 10;
const PEER_SCHEMA = 'better_auth';
const PEER_SECRET = 'bench-better-auth-secret-0123456789abcdefghijklmnop';
const PEER_BASE = '/api/auth/organization';

/** Throughput targets, service ÷ peer, at every size. */
const TARGETS = {
  orgVsFull: 5,
  orgVsActiveMember: 3,
  members: 3,
  teamCreate: 2,
  invitation: 3,
} as const;

interface Side {
  target: Target;
  headers: Record<string, string>;
}

/** GET `path` once: the status and body the load will get, checked before its speed is measured. */
async function probe(side: Side, path: string): Promise<{ status: number; body: Record<string, unknown>; bytes: number }> {
  const res = await fetch(`${side.target.url}${path}`, { headers: side.headers });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Record<string, unknown>, bytes: Buffer.byteLength(text) };
}

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

/** The service's invitation e-mails by status (mail_messages, written in each invitation's transaction). */
async function invitationMail(ctx: BenchContext): Promise<Record<string, number>> {
  const { rows } = await ctx.scratch.pool.query<{ status: string; n: string }>("SELECT status, count(*) AS n FROM mail_messages WHERE kind = 'invitation' GROUP BY status");
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}


/**
 * Scenario 13: the service against the leading peer, Better Auth 1.7 with its organization plugin
 * (teams on), side by side in the same run on the same Postgres: each pair's two targets take
 * turns in alternating rounds at the same connections, at organizations of 50 and 1,000 members
 * with 20 teams (the caller, an admin, in all 20) on both sides. What each side returns and does
 * for each pair is in bench/README.md.
 */
export async function scenarioPeer(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '13',
    title: 'The peer: Better Auth 1.7 (organization plugin, teams on) vs the service, same pairs, same run',
    setup: [
      `reads at ${READ_CONNECTIONS} connections, writes at ${WRITE_CONNECTIONS}; each target warmed ${ctx.warmup} s (the first pair ${Math.max(ctx.warmup, FIRST_WARMUP_SECONDS)} s), then measured ${ctx.duration} s in ${ROUNDS} alternating rounds`,
      `organizations of ${SIZES.join(' and ')} members and ${TEAMS} teams on each side, the caller (an admin) in every team: the service's seeded through its stores (seed/org.ts), the peer's straight into its tables (peers/better-auth-seed.ts); then ANALYZE`,
      'peer: bench/peers/better-auth-server.mjs, better-auth (pinned devDependency) on node:http through its toNodeHandler, a pg Pool (its default size, 10, as the service) on the same scratch database, its tables in their own schema made by its getMigrations; defaults except membershipLimit/invitationLimit and its rate limiter (off); session by its signed cookie',
      'service: as shipped (node dist/src/main.js, LOG_LEVEL as the run, one log line per request); its invitations queue the e-mail in the same transaction and its job runner writes it (.eml files, MAIL_DIR in the run\'s log folder); the peer has no sendInvitationEmail hook and sends nothing',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const ours: { members: number; org: SeededOrg }[] = [];
  for (const members of SIZES) ours.push({ members, org: await seedOrganization(db, { name: `Peer bench ${members}`, members, teams: TEAMS }) });

  const targets: Target[] = [];
  try {
    // The peer creates its schema and tables (its own migration) before it answers.
    const peer = await startProcess({
      name: 'better-auth',
      args: [path.join(ROOT, 'bench', 'peers', 'better-auth-server.mjs')],
      env: { DATABASE_URL: ctx.scratch.url, BETTER_AUTH_SECRET: PEER_SECRET, BETTER_AUTH_SCHEMA: PEER_SCHEMA },
      logFile: path.join(ctx.logDir, 'better-auth.log'),
    });
    targets.push(peer);
    const theirs: PeerOrg[] = [];
    for (const members of SIZES) theirs.push(await seedPeerOrganization(ctx.scratch.pool, { schema: PEER_SCHEMA, secret: PEER_SECRET, name: `Peer bench ${members}`, members, teams: TEAMS }));
    await ctx.scratch.analyze();
    // The organization's invitation budget (100 an hour by default) is off for the load, as the peer's invitation limit is raised.
    const service = await ctx.startService('s13-service', { MAIL_DIR: path.join(ctx.logDir, 's13-mail'), RATE_LIMIT_INVITATION_ORG: 'off' });
    targets.push(service);

    let first = true;
    let n = 0;
    const unique = () => `${n++}-${randomBytes(3).toString('hex')}`;
    for (const [index, members] of SIZES.entries()) {
      const mine: Side = { target: service, headers: { authorization: `Bearer ${ours[index]!.org.callerToken}` } };
      const peerSide: Side = { target: peer, headers: { cookie: theirs[index]!.callerCookie, origin: peer.url } };
      const page = Math.min(members, PAGE);

      // The answers, before their speed: each must be what the README says it is.
      const org = await probe(mine, '/v1/org');
      expect(org.status === 200 && (org.body.currentMemberTeams as unknown[]).length === TEAMS, `service GET /v1/org answered ${org.status}`);
      const full = await probe(peerSide, `${PEER_BASE}/get-full-organization`);
      expect(full.status === 200 && (full.body.teams as unknown[]).length === TEAMS && (full.body.members as unknown[]).length === Math.min(members, 100), `peer get-full-organization answered ${full.status} with ${(full.body.members as unknown[] | undefined)?.length} members`);
      const active = await probe(peerSide, `${PEER_BASE}/get-active-member`);
      expect(active.status === 200 && active.body.role === 'admin', `peer get-active-member answered ${active.status}`);
      const myPage = await probe(mine, `/v1/members?limit=${PAGE}`);
      expect(myPage.status === 200 && (myPage.body.items as unknown[]).length === page, `service GET /v1/members answered ${myPage.status}`);
      const theirPage = await probe(peerSide, `${PEER_BASE}/list-members?limit=${PAGE}`);
      expect(theirPage.status === 200 && (theirPage.body.members as unknown[]).length === page && theirPage.body.total === members, `peer list-members answered ${theirPage.status}`);
      result.notes.push(
        `${members} members: response bodies: GET /v1/org ${(org.bytes / 1024).toFixed(1)} KB, get-full-organization ${(full.bytes / 1024).toFixed(1)} KB (${(full.body.members as unknown[]).length} members, ${TEAMS} teams), get-active-member ${(active.bytes / 1024).toFixed(1)} KB; members page ${(myPage.bytes / 1024).toFixed(1)} KB vs list-members ${(theirPage.bytes / 1024).toFixed(1)} KB (${page} each)`,
      );

      const warmup = () => {
        const seconds = first ? Math.max(ctx.warmup, FIRST_WARMUP_SECONDS) : ctx.warmup;
        first = false;
        return seconds;
      };
      const get = (label: string, side: Side, path: string, seconds: number): LoadOptions => ({
        label: `${label}, ${members} members`,
        url: side.target.url,
        path,
        headers: side.headers,
        connections: READ_CONNECTIONS,
        duration: ctx.duration,
        warmup: seconds,
        targets: [side.target],
      });
      const post = (label: string, side: Side, path: string, body: () => Record<string, string>): LoadOptions => ({
        label: `${label}, ${members} members`,
        url: side.target.url,
        connections: WRITE_CONNECTIONS,
        duration: ctx.duration,
        warmup: ctx.warmup,
        targets: [side.target],
        requests: [{ method: 'POST', path, headers: { ...side.headers, 'content-type': 'application/json' }, setupRequest: (req: object) => ({ ...req, body: JSON.stringify(body()) }) }],
      });

      const readWarmup = warmup();
      const [myOrg, peerFull, peerActive] = (await measureRounds(
        [get('GET /v1/org', mine, '/v1/org', readWarmup), get('peer get-full-organization', peerSide, `${PEER_BASE}/get-full-organization`, readWarmup), get('peer get-active-member', peerSide, `${PEER_BASE}/get-active-member`, readWarmup)],
        ROUNDS,
      )) as [Measurement, Measurement, Measurement];
      const [myMembers, peerMembers] = (await measureRounds(
        [get(`GET /v1/members?limit=${PAGE}`, mine, `/v1/members?limit=${PAGE}`, ctx.warmup), get(`peer list-members?limit=${PAGE}`, peerSide, `${PEER_BASE}/list-members?limit=${PAGE}`, ctx.warmup)],
        ROUNDS,
      )) as [Measurement, Measurement];
      const [myTeams, peerTeams] = (await measureRounds(
        [post('POST /v1/teams', mine, '/v1/teams', () => ({ name: `t-${unique()}` })), post('peer create-team', peerSide, `${PEER_BASE}/create-team`, () => ({ name: `t-${unique()}` }))],
        ROUNDS,
      )) as [Measurement, Measurement];
      const mailBefore = await invitationMail(ctx);
      const [myInvites, peerInvites] = (await measureRounds(
        [
          post('POST /v1/invitations', mine, '/v1/invitations', () => ({ email: `invitee-${unique()}@bench.test`, role: 'member' })),
          post('peer invite-member', peerSide, `${PEER_BASE}/invite-member`, () => ({ email: `invitee-${unique()}@bench.test`, role: 'member' })),
        ],
        ROUNDS,
      )) as [Measurement, Measurement];

      // The service's job runner sent these in the pair's own rounds (its CPU is in the service's row).
      const mailAfter = await invitationMail(ctx);
      result.notes.push(
        `${members} members: service invitation e-mails of the pair: ${(mailAfter.sent ?? 0) - (mailBefore.sent ?? 0)} sent by its job runner, ${(mailAfter.pending ?? 0) - (mailBefore.pending ?? 0)} still queued, ${(mailAfter.failed ?? 0) - (mailBefore.failed ?? 0)} failed, for ${myInvites.requests} measured invitations (plus the warm-up's)`,
      );
      const rows = [myOrg, peerFull, peerActive, myMembers, peerMembers, myTeams, peerTeams, myInvites, peerInvites];
      for (const m of rows) m.extra = cpuExtras(m);
      result.rows.push(...rows);
      // A side that answered nothing in its rounds makes no ratio (NaN is never met).
      const ratio = (name: string, mineM: Measurement, theirM: Measurement, bound: number): Check =>
        check(`${members} members: ${name} req/s, service ÷ peer`, mineM.requests > 0 && theirM.requests > 0 ? mineM.rps / theirM.rps : NaN, '>=', bound);
      result.checks.push(
        ratio('GET /v1/org vs get-full-organization', myOrg, peerFull, TARGETS.orgVsFull),
        ratio('GET /v1/org vs get-active-member', myOrg, peerActive, TARGETS.orgVsActiveMember),
        ratio(`members page of ${page}`, myMembers, peerMembers, TARGETS.members),
        ratio('team create', myTeams, peerTeams, TARGETS.teamCreate),
        ratio('invitation', myInvites, peerInvites, TARGETS.invitation),
        check(`${members} members: errors + non-2xx, both sides`, rows.reduce((sum, m) => sum + m.errors + m.non2xx, 0), '<=', 0),
      );
      for (const m of rows) if (m.non2xx > 0) result.notes.push(`${m.label}: status codes ${JSON.stringify(m.statusCodes)}`);
    }
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
