import { randomBytes } from 'node:crypto';
import type { BenchContext } from '../lib/context';
import { measureTogether, type LoadOptions } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import type { Target } from '../lib/procs';
import { seedOrganization } from '../seed/org';
import { ingestRequests } from './s5-ingest';

const READ_CONNECTIONS = 8;
const INGEST_CONNECTIONS = 4;
const TEAM_CONNECTIONS = 2;

/**
 * Scenario 6: mixed reads and writes on two service processes sharing one Postgres, the way the
 * service scales out. On each process at once: GET /v1/org (reads), POST /v1/telemetry/ingest
 * (50-event batches) and POST /v1/teams (unique names). Afterwards every acknowledged write must
 * be in the database (events and teams counted), and no response may be a 5xx.
 */
export async function scenarioMixed(ctx: BenchContext): Promise<ScenarioResult> {
  const seconds = ctx.duration + ctx.warmup;
  const result: ScenarioResult = {
    id: '6',
    title: 'Mixed read/write load on two service processes, one Postgres',
    setup: [
      `per process: GET /v1/org ×${READ_CONNECTIONS} connections, POST /v1/telemetry/ingest ×${INGEST_CONNECTIONS}, POST /v1/teams ×${TEAM_CONNECTIONS}; ${seconds} s, all at once`,
      'one organization of 200 members / 20 teams; afterwards the stored events and teams are counted against the acknowledged (2xx) writes',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const org = await seedOrganization(ctx.scratch.database.db, { name: 'Mixed Org', members: 200, teams: 20 });
  await ctx.scratch.analyze();
  const targets: Target[] = [];
  try {
    targets.push(await ctx.startService('s6-service-a'), await ctx.startService('s6-service-b'));
    const auth = { authorization: `Bearer ${org.callerToken}` };
    const loads: LoadOptions[] = [];
    targets.forEach((target, p) => {
      let teamN = 0;
      const name = `process ${p === 0 ? 'A' : 'B'}`;
      loads.push(
        { label: `${name}: GET /v1/org`, url: target.url, path: '/v1/org', headers: auth, connections: READ_CONNECTIONS, duration: seconds },
        { label: `${name}: POST /v1/telemetry/ingest`, url: target.url, connections: INGEST_CONNECTIONS, duration: seconds, requests: ingestRequests(org.callerToken, `s6${p}`) },
        {
          label: `${name}: POST /v1/teams`,
          url: target.url,
          connections: TEAM_CONNECTIONS,
          duration: seconds,
          requests: [
            {
              method: 'POST',
              path: '/v1/teams',
              headers: { ...auth, 'content-type': 'application/json' },
              setupRequest: (req: object) => ({ ...req, body: JSON.stringify({ name: `mixed-${p}-${teamN++}-${randomBytes(3).toString('hex')}` }) }),
            },
          ],
        },
      );
    });
    const together = await measureTogether(loads, targets);
    result.rows = together.each;
    // Let in-flight writes that autocannon stopped waiting for finish before counting.
    await new Promise((r) => setTimeout(r, 1500));

    const acknowledged = (labelPart: string, status: string) =>
      together.each.filter((m) => m.label.includes(labelPart)).reduce((n, m) => n + (m.statusCodes[status] ?? 0), 0);
    const ackEvents = acknowledged('ingest', '202') * 50;
    const ackTeams = acknowledged('teams', '201');
    const pool = ctx.scratch.pool;
    const storedEvents = Number((await pool.query('SELECT count(*) AS n FROM telemetry_events WHERE organization_id = $1', [org.organizationId])).rows[0].n);
    const storedTeams = Number((await pool.query('SELECT count(*) AS n FROM teams WHERE organization_id = $1', [org.organizationId])).rows[0].n) - org.teamIds.length;
    const fiveXx = together.each.reduce((n, m) => n + Object.entries(m.statusCodes).filter(([code]) => code.startsWith('5')).reduce((s, [, c]) => s + c, 0), 0);
    const errors = together.each.reduce((n, m) => n + m.errors, 0);
    const inFlight = targets.length * (INGEST_CONNECTIONS + TEAM_CONNECTIONS);
    result.checks.push(
      check('stored events − acknowledged events (lost writes if < 0)', storedEvents - ackEvents, '>=', 0),
      check('stored teams − acknowledged teams (lost writes if < 0)', storedTeams - ackTeams, '>=', 0),
      check('5xx responses', fiveXx, '<=', 0),
      check('socket errors / timeouts', errors, '<=', 0),
    );
    result.notes.push(
      `events: ${ackEvents} acknowledged, ${storedEvents} stored; teams: ${ackTeams} acknowledged, ${storedTeams} stored (a surplus up to the ${inFlight} writes in flight when the load stopped is expected: the server finished requests whose answers nobody waited for)`,
      `peak RSS per process: ${together.peakRssMb.map((v) => v.toFixed(0)).join(' MB, ')} MB; CPU cores per process: ${together.cpuCores.map((v) => v.toFixed(2)).join(', ')}`,
      `total throughput: ${together.each.reduce((n, m) => n + m.rps, 0).toFixed(0)} req/s`,
    );
    const nonTwo = together.each.filter((m) => m.non2xx > 0).map((m) => `${m.label}: ${JSON.stringify(m.statusCodes)}`);
    if (nonTwo.length) result.notes.push(`non-2xx answers: ${nonTwo.join('; ')}`);
    if (storedEvents - ackEvents > inFlight * 50 || storedTeams - ackTeams > inFlight) result.notes.push('more stored than acknowledged + in flight: check the counting');
    return result;
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
}
