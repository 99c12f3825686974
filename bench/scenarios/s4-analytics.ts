import type { BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';
import { seedTelemetry } from '../seed/telemetry';

const CONNECTIONS = 4;
const OTHER_ORGS = 5;
const OTHER_EVENTS = 50_000;
/** The four requests take turns in this many rounds, so a drift of the machine's load hits them alike. */
const ROUNDS = 4;

/**
 * Scenario 4: GET /v1/telemetry/analytics for an organization with 100,000 events and one with
 * 1,000,000 (90 days each, 50 members), next to other organizations' data, seeded with the
 * telemetry area's own seeder (bench/seed/telemetry.ts). Growth should be sub-linear: the 10×
 * larger organization within 1.5× the p50 (2× filtered by a dimension), issue #20's targets.
 */
export async function scenarioAnalytics(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '4',
    title: 'GET /v1/telemetry/analytics at 100,000 and 1,000,000 events',
    setup: [
      `${CONNECTIONS} connections; the four requests warmed up ${ctx.warmup} s each, then measured ${ctx.duration} s each in ${ROUNDS} alternating rounds`,
      `events over 90 days, 20 per session, 50 members per organization; ${OTHER_ORGS} other organizations with ${OTHER_EVENTS.toLocaleString('en')} events each share the tables; seeded by bench/seed/telemetry.ts, then ANALYZE`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const t0 = Date.now();
  const sizes = [100_000, 1_000_000];
  const orgs = [];
  for (const events of sizes) {
    const org = await seedOrganization(db, { name: `Analytics ${events}`, members: 50, teams: 5 });
    await seedTelemetry(db, { organizationId: org.organizationId, memberIds: org.memberIds, events, days: 90 });
    orgs.push({ events, org });
  }
  for (let i = 0; i < OTHER_ORGS; i++) {
    const other = await seedOrganization(db, { name: `Other ${i}`, members: 10, teams: 1 });
    await seedTelemetry(db, { organizationId: other.organizationId, memberIds: other.memberIds, events: OTHER_EVENTS, days: 90 });
  }
  await ctx.scratch.analyze();
  result.notes.push(`seeding took ${((Date.now() - t0) / 1000).toFixed(0)} s`);

  const service = await ctx.startService('s4-service');
  try {
    const loads: LoadOptions[] = [];
    const sessions30d: number[] = [];
    for (const { events, org } of orgs) {
      const headers = { authorization: `Bearer ${org.callerToken}` };
      for (const [suffix, query] of [
        ['', ''],
        [' filtered by a dimension', '?dimensionType=team&dimensionValue=team-1'],
      ] as const) {
        const path = `/v1/telemetry/analytics${query}`;
        const probe = await fetch(`${service.url}${path}`, { headers });
        if (probe.status === 501) {
          result.skipped = 'GET /v1/telemetry/analytics is not implemented yet';
          return result;
        }
        const body = (await probe.json()) as { weekly?: unknown[]; sessions30d?: number };
        if (probe.status !== 200 || body.weekly?.length !== 12) throw new Error(`analytics answered ${probe.status}: ${JSON.stringify(body).slice(0, 300)}`);
        loads.push({ label: `${events.toLocaleString('en')} events${suffix}`, url: service.url, path, headers, connections: CONNECTIONS, duration: ctx.duration, warmup: ctx.warmup, targets: [service] });
        sessions30d.push(body.sessions30d ?? -1);
      }
    }
    // Measured one after the other, a drift of the machine's load between the sizes decided the
    // ratio (1.24 and 1.58 in two full runs of the same build); in rounds it hits both sizes alike.
    const rows = await measureRounds(loads, ROUNDS);
    rows.forEach((m, i) => (m.extra = { sessions30d: sessions30d[i]! }));
    result.rows = rows;
    const [small, smallFiltered, large, largeFiltered] = rows as [Measurement, Measurement, Measurement, Measurement];
    result.checks.push(
      check('p50 at 1M / p50 at 100k', large.p50 / small.p50, '<=', 1.5),
      check('p50 at 1M / p50 at 100k, filtered', largeFiltered.p50 / smallFiltered.p50, '<=', 2),
      check('p50 at 1M, ms (guide)', large.p50, '<=', 100),
      check('errors + non-2xx', rows.reduce((n, r) => n + r.errors + r.non2xx, 0), '<=', 0),
    );
    return result;
  } finally {
    await service.stop();
  }
}
