import type { BenchContext } from '../lib/context';
import { SECRET_KEY } from '../lib/context';
import { measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import type { Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedLargeOrganization, type LargeOrg } from '../seed/large-org';
import { Cursors } from '../../src/lib/pagination';
import { deriveKey } from '../../src/lib/crypto';

const SIZES = [50, 1_000, 10_000];
/** The member list and the SCIM list are also read at this size. */
const LIST_SIZE = 100_000;
const LIMIT = 50;
const CONNECTIONS = 8;
const ROUNDS = 4;

interface Endpoint {
  name: string;
  /** Sizes it is read at. */
  sizes: number[];
  /** Its path in an organization of that size, and the credential it is read with. */
  request: (org: LargeOrg, size: number) => Promise<{ path: string; token: string }>;
  /** Whether its answer's size must not depend on the organization's (a bounded object, not a page). */
  bounded: boolean;
}

/**
 * Scenario 11: what the organization's size does to answers that should not depend on it. An
 * organization of 50, 1,000 and 10,000 members (and 100,000 for the member and SCIM lists) whose
 * every member is in one "Everyone" team, as directory sync creates it, and whose caller (an
 * admin) is also in 20 small teams: GET /v1/org, GET /v1/me, GET /v1/members (first page and a
 * page as deep as the list goes), GET /v1/teams, GET /v1/teams/{Everyone}/members, a SCIM Users
 * page (first and deepest) and an audit search page, each timed at every size in alternating
 * rounds. Targets: p50 at the largest size ≤ 1.3× p50 at 50, and bodies of the non-page answers
 * the same size at every size (teams carry memberCount, never member ids).
 */
export async function scenarioGrowth(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '11',
    title: `Growth: answers at ${[...SIZES, LIST_SIZE].map((n) => n.toLocaleString('en')).join(' / ')} members`,
    setup: [
      `${CONNECTIONS} connections; per endpoint the sizes take turns in ${ROUNDS} rounds (${Math.min(ctx.warmup, 1)} s warm-up each, ${ctx.duration} s measured each in total); one service process`,
      `organizations seeded set-based: every member in an "Everyone" team, the caller (an admin) also in 20 teams of 10; as many audit entries and directory users as members; pages of ${LIMIT}`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const cursors = new Cursors(deriveKey(SECRET_KEY, 'cursor'));
  const t0 = Date.now();
  const orgs = new Map<number, LargeOrg>();
  for (const size of [...SIZES, LIST_SIZE]) {
    const list = size === LIST_SIZE;
    orgs.set(size, await seedLargeOrganization(db, { name: `Growth ${size}`, members: size, smallTeams: list ? 0 : 20, auditEntries: list ? 0 : size, directoryUsers: size }));
  }
  await ctx.scratch.pool.query('VACUUM ANALYZE');
  result.notes.push(`seeding took ${((Date.now() - t0) / 1000).toFixed(0)} s`);

  /** The cursor of the page that ends the list (the first page when the list fits in one). */
  const deepMembersCursor = async (org: LargeOrg, size: number): Promise<string> => {
    if (size <= LIMIT) return '';
    const { rows } = await ctx.scratch.pool.query<{ created_at: Date; id: string }>(
      'SELECT created_at, id FROM members WHERE organization_id = $1 AND removed_at IS NULL ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1',
      [org.organizationId, size - LIMIT - 1],
    );
    return `&cursor=${encodeURIComponent(cursors.encode('members', { createdAt: rows[0]!.created_at, id: rows[0]!.id }))}`;
  };
  const all = [...SIZES, LIST_SIZE];
  const endpoints: Endpoint[] = [
    { name: 'GET /v1/org', sizes: SIZES, bounded: true, request: async (org) => ({ path: '/v1/org', token: org.callerToken }) },
    { name: 'GET /v1/me', sizes: SIZES, bounded: true, request: async (org) => ({ path: '/v1/me', token: org.callerToken }) },
    { name: 'GET /v1/members first page', sizes: all, bounded: false, request: async (org) => ({ path: `/v1/members?limit=${LIMIT}`, token: org.callerToken }) },
    { name: 'GET /v1/members last page', sizes: all, bounded: false, request: async (org, size) => ({ path: `/v1/members?limit=${LIMIT}${await deepMembersCursor(org, size)}`, token: org.callerToken }) },
    { name: 'GET /v1/teams', sizes: SIZES, bounded: true, request: async (org) => ({ path: '/v1/teams?limit=50', token: org.callerToken }) },
    { name: 'GET /v1/teams/{Everyone}/members', sizes: SIZES, bounded: false, request: async (org) => ({ path: `/v1/teams/${org.everyoneTeamId}/members?limit=${LIMIT}`, token: org.callerToken }) },
    { name: 'SCIM GET /Users first page', sizes: all, bounded: false, request: async (org) => ({ path: `/scim/v2/Users?startIndex=1&count=${LIMIT}`, token: org.scimToken }) },
    { name: 'SCIM GET /Users last page', sizes: all, bounded: false, request: async (org, size) => ({ path: `/scim/v2/Users?startIndex=${Math.max(1, size - LIMIT + 1)}&count=${LIMIT}`, token: org.scimToken }) },
    // startIndex is an offset (RFC 7644 §3.4.2.4): a middle page skips half the list's index
    // entries. Reported, and held to scenario 10's guide (≤ 1.5× the first page at 10,000).
    { name: 'SCIM GET /Users middle page', sizes: all, bounded: false, request: async (org, size) => ({ path: `/scim/v2/Users?startIndex=${Math.max(1, Math.floor(size / 2))}&count=${LIMIT}`, token: org.scimToken }) },
    { name: 'GET /v1/audit-logs page', sizes: SIZES, bounded: false, request: async (org) => ({ path: `/v1/audit-logs?limit=${LIMIT}`, token: org.callerToken }) },
  ];

  const targets: Target[] = [];
  try {
    const service = await ctx.startService('s11-service');
    targets.push(service);
    const sizeTable: string[] = ['| endpoint | ' + all.map((n) => `${n.toLocaleString('en')} members`).join(' | ') + ' |', '|---|' + all.map(() => '---:').join('|') + '|'];
    for (const endpoint of endpoints) {
      const loads: LoadOptions[] = [];
      const bytes = new Map<number, number>();
      for (const size of endpoint.sizes) {
        const org = orgs.get(size)!;
        const { path, token } = await endpoint.request(org, size);
        const headers = { authorization: `Bearer ${token}` };
        const probe = await fetch(`${service.url}${path}`, { headers });
        const body = await probe.text();
        if (probe.status !== 200) throw new Error(`${endpoint.name} at ${size} answered ${probe.status}: ${body.slice(0, 300)}`);
        bytes.set(size, Buffer.byteLength(body));
        loads.push({ label: `${endpoint.name}, ${size.toLocaleString('en')} members`, url: service.url, path, headers, connections: CONNECTIONS, duration: ctx.duration, warmup: Math.min(ctx.warmup, 1), targets: [service] });
      }
      const measured = await measureRounds(loads, ROUNDS);
      for (const [i, m] of measured.entries()) m.extra = { 'body bytes': bytes.get(endpoint.sizes[i]!)! };
      result.rows.push(...measured);
      sizeTable.push(`| ${endpoint.name} | ${all.map((n) => (bytes.has(n) ? bytes.get(n)!.toLocaleString('en') : '—')).join(' | ')} |`);
      if (endpoint.name.includes('middle page')) {
        const at10k = measured[endpoint.sizes.indexOf(10_000)]!;
        result.notes.push(`${endpoint.name}: p50 ${measured.map((m, i) => `${endpoint.sizes[i]!.toLocaleString('en')}: ${m.p50.toFixed(1)} ms`).join(', ')}`);
        result.checks.push(check(`${endpoint.name}: p50 at 10,000 / p50 at 50`, at10k.p50 / measured[0]!.p50, '<=', 1.5));
        continue;
      }
      const smallest = measured[0]!;
      const largest = measured[measured.length - 1]!;
      const largestSize = endpoint.sizes[endpoint.sizes.length - 1]!;
      result.checks.push(check(`${endpoint.name}: p50 at ${largestSize.toLocaleString('en')} / p50 at ${endpoint.sizes[0]}`, largest.p50 / smallest.p50, '<=', 1.3));
      // Non-page answers must be the same size whatever the organization's size (names and
      // e-mails of seeded members differ by a few digits: 5 % covers that, a member id list does not).
      if (endpoint.bounded) result.checks.push(check(`${endpoint.name}: body at ${largestSize.toLocaleString('en')} / at ${endpoint.sizes[0]}`, bytes.get(largestSize)! / bytes.get(endpoint.sizes[0]!)!, '<=', 1.05));
      else {
        // A page holds LIMIT items at every size: its body may not grow with the list behind it.
        const full = endpoint.sizes.filter((n) => n > LIMIT);
        const first = bytes.get(full[0]!)!;
        result.checks.push(check(`${endpoint.name}: body at ${largestSize.toLocaleString('en')} / at ${full[0]!.toLocaleString('en')}`, bytes.get(largestSize)! / first, '<=', 1.05));
      }
    }
    result.checks.push(check('errors + non-2xx', result.rows.reduce((n: number, r: Measurement) => n + r.errors + r.non2xx, 0), '<=', 0));
    result.notes.push('response bodies, bytes:', ...sizeTable);
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
