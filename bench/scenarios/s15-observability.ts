import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import type { BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import { freePort, type Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const ROUNDS = 4;
const READ_CONNECTIONS = 16;
const WRITE_CONNECTIONS = 4;

/**
 * Scenario 15: what metrics and traces cost (docs/running-the-service.md). GET /v1/org and POST /v1/teams
 * on three service processes of the same build and database, in alternating rounds: as shipped
 * (metrics and tracing off), with METRICS_PORT set (and Prometheus-like scrapes every second), and
 * with tracing exporting every span over OTLP/HTTP to a receiver in this process. Targets: metrics
 * p50 ≤ 1.05× off, tracing p50 ≤ 1.3× off. "Off costs what it cost before" is scenario 1's
 * `--previous` comparison.
 */
export async function scenarioObservability(ctx: BenchContext): Promise<ScenarioResult> {
  const db = ctx.scratch.database.db;
  const org = await seedOrganization(db, { name: 'Observability', members: 50, teams: 20 });
  const result: ScenarioResult = {
    id: '15',
    title: 'Observability: metrics on vs off, tracing exporting vs off (GET /v1/org, POST /v1/teams)',
    setup: [
      `three service processes on one database: off; METRICS_PORT set and scraped every second; OTEL_EXPORTER_OTLP_ENDPOINT to a local OTLP/HTTP receiver (every span sampled, exported as protobuf)`,
      `GET /v1/org at ${READ_CONNECTIONS} connections, POST /v1/teams (unique names) at ${WRITE_CONNECTIONS}; warmed ${ctx.warmup} s, measured ${ctx.duration} s in ${ROUNDS} alternating rounds`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  let exportedBytes = 0;
  let exportRequests = 0;
  const receiver = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (exportedBytes += c.length));
    req.on('end', () => {
      exportRequests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverPort = (receiver.address() as net.AddressInfo).port;
  const targets: Target[] = [];
  let scraper: NodeJS.Timeout | undefined;
  try {
    const metricsPort = await freePort();
    const off = await ctx.startService('s15-off');
    const metrics = await ctx.startService('s15-metrics', { METRICS_PORT: String(metricsPort) });
    const traced = await ctx.startService('s15-tracing', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiverPort}` });
    targets.push(off, metrics, traced);
    scraper = setInterval(() => void fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.arrayBuffer()).catch(() => undefined), 1000);
    const auth = { authorization: `Bearer ${org.callerToken}` };
    let n = 0;
    const read = (label: string, target: Target): LoadOptions => ({
      label: `GET /v1/org, ${label}`,
      url: target.url,
      connections: READ_CONNECTIONS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      targets: [target],
      requests: [{ method: 'GET', path: '/v1/org', headers: auth }],
    });
    const write = (label: string, target: Target): LoadOptions => ({
      label: `POST /v1/teams, ${label}`,
      url: target.url,
      connections: WRITE_CONNECTIONS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      targets: [target],
      requests: [
        {
          method: 'POST',
          path: '/v1/teams',
          headers: { ...auth, 'content-type': 'application/json' },
          setupRequest: (req: object) => ({ ...req, body: JSON.stringify({ name: `o-${n++}-${randomBytes(3).toString('hex')}` }) }),
        },
      ],
    });
    for (const [what, load] of [['GET /v1/org', read], ['POST /v1/teams', write]] as const) {
      const [base, withMetrics, withTracing] = (await measureRounds([load('off (baseline)', off), load('metrics on', metrics), load('tracing exporting', traced)], ROUNDS)) as [Measurement, Measurement, Measurement];
      result.rows.push(base, withMetrics, withTracing);
      result.checks.push(
        check(`${what} p50 metrics on / off`, withMetrics.p50 / base.p50, '<=', 1.05),
        check(`${what} p50 tracing / off`, withTracing.p50 / base.p50, '<=', 1.3),
        check(`${what} errors + non-2xx`, [base, withMetrics, withTracing].reduce((sum, m) => sum + m.errors + m.non2xx, 0), '<=', 0),
      );
    }
    result.notes.push(`OTLP receiver: ${exportRequests} export requests, ${(exportedBytes / 1e6).toFixed(1)} MB of spans`);
    result.checks.push(check('spans exported (requests to the receiver)', exportRequests, '>=', 1));
  } finally {
    if (scraper) clearInterval(scraper);
    await Promise.all(targets.map((t) => t.stop()));
    receiver.close();
  }
  return result;
}
