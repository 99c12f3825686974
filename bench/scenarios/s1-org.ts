import { shippedNodeFlags, type BenchContext } from '../lib/context';
import { cpuExtras, cpuMsPerRequest, measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import type { Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const CONNECTIONS = 32;
/** Targets take turns in this many rounds, so background load drifts hit them alike. */
const ROUNDS = 4;
/** Organization sizes measured (members; 20 teams each, the caller in all of them). */
const SIZES = [50, 200] as const;
/**
 * Warm-up of each target before its rounds (seconds; at least --warmup). A fresh service process
 * needs about 6 s of this load before its CPU per request settles (V8 optimises its much larger
 * hot path later than a baseline's, while the compiler threads compete for the same two cores):
 * measured in 2-s windows from a cold start, ~1.06, 0.63, 0.46 ms, then 0.42-0.48 ms, against the
 * bare floor's ~0.4 ms, then 0.16-0.25 ms from its second window on. With 2 s, the service's
 * first round was still warming up. Steady state is what a long-running service serves; the
 * per-round CPU figures printed with the results show whether a target was still warming up.
 */
const WARMUP_SECONDS = 10;

/**
 * Scenario 1: GET /v1/org with a session token at 32 connections, on organizations of 50 and 200
 * members and 20 teams (the caller is in all 20), against
 * - bare-org: Node's http + pg, ONE prepared statement (the floor for this request on this machine),
 * - express-org: the same database work written plainly with Express + pg (four queries),
 * - bare-http: Node's http server answering a constant JSON (the HTTP layer's ceiling; full runs).
 * Each target is its own process; they take turns under the same load (alternating rounds).
 */
export async function scenarioOrg(ctx: BenchContext): Promise<ScenarioResult> {
  // The CI smoke run (the code must not rot, speed is not judged) measures one size.
  const sizes = ctx.smoke ? SIZES.slice(-1) : SIZES;
  const warmup = ctx.smoke ? ctx.warmup : Math.max(ctx.warmup, WARMUP_SECONDS);
  const orgs = [];
  for (const members of sizes) orgs.push({ members, org: await seedOrganization(ctx.scratch.database.db, { name: `Bench Org ${members}`, members, teams: 20 }) });
  await ctx.scratch.analyze();
  const result: ScenarioResult = {
    id: '1',
    title: 'GET /v1/org (session token)',
    setup: [
      `${CONNECTIONS} connections; each target warmed up ${warmup} s, then measured ${ctx.duration} s in ${ROUNDS} alternating rounds (one target loaded at a time), per organization size`,
      `organizations of ${sizes.join(' and ')} members and 20 teams seeded through the stores, then ANALYZE; the caller (an admin) is in all 20 teams`,
      `service: node ${[...shippedNodeFlags(), ''].join(' ')}dist/src/main.js (as npm start), LOG_LEVEL=${ctx.logLevel}, response validation off (as shipped), pool max 10, every route group loaded`,
      'bare-org floor: node:http + pg, sha256 of the token, ONE prepared statement, JSON.stringify, pool max 10',
      'express-org baseline: Express + pg, sha256 of the token then 4 sequential queries (session, member+org, owner, teams), pool max 10',
      'cpu ms/req: CPU seconds of the process over the measured window ÷ requests answered; pg cpu ms/req: the same for every `postgres` process on this machine (the server is local by default); load gen cpu ms/req: this bench process (autocannon) per response; machine busy cores: every process, from /proc/stat (2.0 = two cores fully used)',
    ],
    rows: [],
    checks: [],
    notes: [],
  };

  const specs = [
    ['bare-http', () => ctx.startBaseline('bare-http.mjs')],
    ['bare-org', () => ctx.startBaseline('bare-org.mjs')],
    ['express-org', () => ctx.startBaseline('express-org.mjs')],
    ['service', () => ctx.startService('s1-service')],
    // --compare-node-flags: the same service without the flags it ships with (README "Memory").
    ...(ctx.compareNodeFlags ? ([['service-no-flags', () => ctx.startService('s1-service-no-flags', {}, [])]] as const) : []),
    // --previous: the earlier build on the same data (the change's cost, same run).
    ...(ctx.startPrevious ? ([['previous-build', () => ctx.startPrevious!('s1-previous')]] as const) : []),
  ] as const;
  const targets: Record<string, Target> = {};
  try {
    for (const [label, start] of specs) {
      if (ctx.smoke && label === 'bare-http') continue;
      targets[label] = await start();
    }
    for (const [index, { members, org }] of orgs.entries()) {
      const headers = { authorization: `Bearer ${org.callerToken}` };
      const bodies: Record<string, string> = {};
      const loads: LoadOptions[] = [];
      for (const [label, target] of Object.entries(targets)) {
        // The constant-JSON ceiling does not depend on the organization: measured once.
        if (label === 'bare-http' && index > 0) continue;
        const path = label === 'bare-http' ? '/' : '/v1/org';
        if (path === '/v1/org') {
          // The responses must be the same before their speed is compared.
          const res = await fetch(`${target.url}/v1/org`, { headers });
          const body = (await res.json()) as { currentMemberTeams?: unknown[] };
          if (res.status !== 200 || body.currentMemberTeams?.length !== 20) throw new Error(`${label}: GET /v1/org answered ${res.status} with ${body.currentMemberTeams?.length} teams`);
          bodies[label] = JSON.stringify(body);
        }
        loads.push({ label: `${label}, ${members} members`, url: target.url, path, headers, connections: CONNECTIONS, duration: ctx.duration, warmup, targets: [target] });
      }
      // A baseline that answers less than the service does less work, and its ratio would flatter
      // the service. CI's smoke run fails on it, so a contract change cannot leave the floor behind.
      for (const baseline of ['bare-org', 'express-org'] as const) {
        if (bodies[baseline] === undefined) continue;
        const same = bodies[baseline] === bodies['service'];
        if (ctx.smoke && !same) throw new Error(`${baseline} answers GET /v1/org with another body than the service: ${bodies[baseline]} vs ${bodies['service']}`);
        result.checks.push(check(`${members} members: ${baseline} answers the service's body (1 = same JSON)`, same ? 1 : 0, '>=', 1));
      }
      const rows: Record<string, Measurement> = {};
      for (const m of await measureRounds(loads, ROUNDS)) rows[m.label.split(',')[0]!] = m;
      const service = rows['service']!;
      const express = rows['express-org']!;
      const bare = rows['bare-org'];
      const plain = rows['service-no-flags'];
      const previous = rows['previous-build'];
      if (previous) {
        result.checks.push(check(`${members} members: throughput service / previous build`, service.rps / previous.rps, '>=', 0.95));
        result.notes.push(`${members} members: CPU per request service ${cpuMsPerRequest(service).toFixed(3)} ms, previous build ${cpuMsPerRequest(previous).toFixed(3)} ms; p50 ${service.p50.toFixed(2)} / ${previous.p50.toFixed(2)} ms`);
      }
      for (const m of Object.values(rows)) {
        m.extra = { ...m.extra, ...cpuExtras(m) };
      }
      result.rows.push(...Object.values(rows));
      result.checks.push(
        check(`${members} members: throughput service / express-org`, service.rps / express.rps, '>=', 1.5),
        check(`${members} members: p99 service / express-org`, service.p99 / express.p99, '<=', 1.0),
        check(`${members} members: service errors + non-2xx`, service.errors + service.non2xx, '<=', 0),
      );
      if (bare) {
        result.checks.push(check(`${members} members: throughput service / bare-org`, service.rps / bare.rps, '>=', 0.8));
        result.notes.push(
          `${members} members: p99 service / bare-org ${(service.p99 / bare.p99).toFixed(2)}; CPU per request service ${cpuMsPerRequest(service).toFixed(2)} ms, bare-org ${cpuMsPerRequest(bare).toFixed(2)} ms, express-org ${cpuMsPerRequest(express).toFixed(2)} ms`,
        );
      }
      // Whether the service was still warming up: its CPU per request in each round, in order.
      if (service.roundCpuMsPerReq) result.notes.push(`${members} members: service CPU ms per request by round: ${service.roundCpuMsPerReq.map((v) => v.toFixed(3)).join(', ')}`);
      if (previous?.roundCpuMsPerReq) result.notes.push(`${members} members: previous build CPU ms per request by round: ${previous.roundCpuMsPerReq.map((v) => v.toFixed(3)).join(', ')}`);
      if (plain) {
        result.notes.push(
          `${members} members: service with its node flags / without: throughput ${(service.rps / plain.rps).toFixed(2)}, CPU per request ${cpuMsPerRequest(service).toFixed(3)} / ${cpuMsPerRequest(plain).toFixed(3)} ms, peak RSS ${service.peakRssMb?.toFixed(0)} / ${plain.peakRssMb?.toFixed(0)} MB`,
        );
      }
      if (index === orgs.length - 1) {
        const peak = Math.max(...result.rows.filter((m) => m.label.startsWith('service,')).map((m) => m.peakRssMb ?? NaN));
        result.checks.push(check('service peak RSS MB, both sizes (every route group loaded)', peak, '<=', 180));
      }
    }
  } finally {
    await Promise.all(Object.values(targets).map((t) => t.stop()));
  }
  const ceiling = result.rows.find((m) => m.label.startsWith('bare-http'));
  const service = result.rows.filter((m) => m.label.startsWith('service,')).at(-1);
  if (ceiling && service) result.notes.push(`service throughput is ${(service.rps / ceiling.rps).toFixed(2)}× the constant-JSON HTTP ceiling`);
  return result;
}
