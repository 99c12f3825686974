import type { BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import type { Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const CONNECTIONS = 32;
/** Targets take turns in this many rounds, so background load drifts hit them alike. */
const ROUNDS = 4;

/**
 * Scenario 1: GET /v1/org with a session token at 32 connections, on an organization of 200
 * members and 20 teams (the caller is in all 20), against
 * - bare-http: Node's http server answering a constant JSON (the HTTP layer's ceiling), and
 * - express-org: the same database work written plainly with Express + pg (four queries).
 * Each target is its own process; they take turns under the same load (alternating rounds).
 */
export async function scenarioOrg(ctx: BenchContext): Promise<ScenarioResult> {
  const org = await seedOrganization(ctx.scratch.database.db, { name: 'Bench Org', members: 200, teams: 20 });
  await ctx.scratch.analyze();
  const headers = { authorization: `Bearer ${org.callerToken}` };
  const bodies: string[] = [];
  const result: ScenarioResult = {
    id: '1',
    title: 'GET /v1/org (session token)',
    setup: [
      `${CONNECTIONS} connections; each target warmed up ${ctx.warmup} s, then measured ${ctx.duration} s in ${ROUNDS} alternating rounds (one target loaded at a time)`,
      'organization of 200 members and 20 teams seeded through the stores, then ANALYZE; the caller (an admin) is in all 20 teams (≈11 members each)',
      `service: node dist/src/main.js, LOG_LEVEL=${ctx.logLevel}, response validation off (as shipped), pool max 10`,
      'express-org baseline: Express + pg, sha256 of the token then 4 sequential queries (session, member+org, owner, teams), pool max 10',
    ],
    rows: [],
    checks: [],
    notes: [],
  };

  const specs = [
    ['bare-http (ceiling)', () => ctx.startBaseline('bare-http.mjs'), '/'],
    ['express-org (baseline)', () => ctx.startBaseline('express-org.mjs'), '/v1/org'],
    ['service', () => ctx.startService('s1-service'), '/v1/org'],
  ] as const;
  const targets: Target[] = [];
  const rows: Record<string, Measurement> = {};
  try {
    const loads: LoadOptions[] = [];
    for (const [label, start, path] of specs) {
      if (ctx.smoke && label.startsWith('bare')) continue;
      const target = await start();
      targets.push(target);
      // The responses must be the same before their speed is compared.
      if (path === '/v1/org') {
        const res = await fetch(`${target.url}/v1/org`, { headers });
        const body = (await res.json()) as { currentMemberTeams?: unknown[] };
        if (res.status !== 200 || body.currentMemberTeams?.length !== 20) throw new Error(`${label}: GET /v1/org answered ${res.status} with ${body.currentMemberTeams?.length} teams`);
        bodies.push(JSON.stringify(body));
      }
      loads.push({ label, url: target.url, path, headers, connections: CONNECTIONS, duration: ctx.duration, warmup: ctx.warmup, targets: [target] });
    }
    if (bodies.length === 2 && bodies[0] !== bodies[1]) result.notes.push('the baseline and the service answered different bodies: compare them before trusting the ratio');
    for (const m of await measureRounds(loads, ROUNDS)) rows[m.label] = m;
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  const service = rows['service']!;
  const baseline = rows['express-org (baseline)']!;
  const ceiling = rows['bare-http (ceiling)'];
  result.rows = [...(ceiling ? [ceiling] : []), baseline, service];
  result.checks.push(
    check('throughput service / express-org', service.rps / baseline.rps, '>=', 0.9),
    check('p99 service / express-org', service.p99 / baseline.p99, '<=', 1.1),
    check('service peak RSS MB', service.peakRssMb ?? NaN, '<=', 250),
    check('service errors + non-2xx', service.errors + service.non2xx, '<=', 0),
  );
  if (ceiling) result.notes.push(`service throughput is ${(service.rps / ceiling.rps).toFixed(2)}× the bare HTTP ceiling; express-org is ${(baseline.rps / ceiling.rps).toFixed(2)}×`);
  return result;
}
