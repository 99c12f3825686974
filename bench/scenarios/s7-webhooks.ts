import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BenchContext } from '../lib/context';
import { percentile, type Measurement } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { sampleProcesses, type Target } from '../lib/procs';
import { seedOrganization } from '../seed/org';

const ENDPOINTS = 5;
/** Team creations per second (each is one event, delivered to every endpoint). */
const WRITES_PER_SECOND = 120;
const DRAIN_LIMIT_MS = 60_000;
/** Seconds of the write load before the measured window (see scenarioWebhooks). */
const WARMUP_SECONDS = 10;
/** Events queued at once for the capacity measurement (each delivered to every endpoint). */
const BACKLOG_EVENTS = 2000;

interface Receipt {
  key: string;
  at: number;
  delayMs: number;
  /** The created team's name (the write it came from), when the event carries one. */
  name: string | null;
}

/** A local webhook receiver: when each (endpoint, webhook-id) arrived, its delay since the event, and duplicates in flight. */
async function startReceiver() {
  const receipts: Receipt[] = [];
  const open = new Map<string, number>();
  let duplicatesInFlight = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const key = `${req.url} ${req.headers['webhook-id']}`;
      const n = (open.get(key) ?? 0) + 1;
      if (n > 1) duplicatesInFlight++;
      open.set(key, n);
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { createdAt: string; data?: { changes?: { name?: { to?: unknown } } } };
      const name = event.data?.changes?.name?.to;
      receipts.push({ key, at, delayMs: at - Date.parse(event.createdAt), name: typeof name === 'string' ? name : null });
      res.writeHead(204).end();
      open.set(key, n - 1);
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    receipts,
    duplicatesInFlight: () => duplicatesInFlight,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

/**
 * Scenario 7: webhook delivery under a write load, on two service processes sharing one Postgres.
 * Team creations at a fixed rate (alternating processes) each write an event in their
 * transaction, fanned out to 5 endpoints on a local receiver; the processes' dispatchers deliver
 * them. Measured: deliveries per second while the load runs, delay from the event's commit
 * (its createdAt, stamped just before commit) to receipt, duplicates in flight, and lost
 * deliveries (every acknowledged write × endpoint must arrive once the queue drains).
 */
export async function scenarioWebhooks(ctx: BenchContext): Promise<ScenarioResult> {
  // Two fresh processes take 5-7 s of this load to settle (JIT; in a full run, after the other
  // scenarios, the longer): deliveries queue up to 1-2 s behind meanwhile, then run 13-22 ms p50
  // (the per-second delays in the notes show it). The measured window starts after a 10-s
  // warm-up, as scenario 1's does.
  const warmup = ctx.smoke ? ctx.warmup : Math.max(ctx.warmup, WARMUP_SECONDS);
  const seconds = ctx.duration + warmup;
  const result: ScenarioResult = {
    id: '7',
    title: 'Webhook delivery: events from a write load delivered by two processes',
    setup: [
      `POST /v1/teams at ${WRITES_PER_SECOND}/s for ${seconds} s (alternating between two fresh service processes; the first ${warmup} s warm them up and are not measured); ${ENDPOINTS} endpoints subscribed to team.* on one local receiver (204 at once)`,
      'targets: >= 500 deliveries/s, p99 commit → receipt < 1 s, no attempt in flight twice, nothing lost',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const org = await seedOrganization(ctx.scratch.database.db, { name: 'Webhook Org', members: 5, teams: 0 });
  const receiver = await startReceiver();
  const targets: Target[] = [];
  try {
    const env = { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' };
    targets.push(await ctx.startService('s7-service-a', env), await ctx.startService('s7-service-b', env));
    const auth = { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' };
    for (let i = 0; i < ENDPOINTS; i++) {
      const res = await fetch(`${targets[0]!.url}/v1/webhooks`, { method: 'POST', headers: auth, body: JSON.stringify({ url: receiver.url(`/e${i}`), events: ['team.*'] }) });
      if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${await res.text()}`);
    }

    // Paced writes: every 10 ms the writes due by then, never waiting for answers to send more.
    const statusCodes: Record<string, number> = {};
    const latencies: number[] = [];
    const acknowledgedAt = new Map<string, number>();
    let errors = 0;
    let sent = 0;
    const pending = new Set<Promise<void>>();
    const sampler = sampleProcesses(targets.map((t) => t.pid));
    const started = Date.now();
    const loadEnds = started + seconds * 1000;
    while (Date.now() < loadEnds) {
      const due = Math.floor(((Date.now() - started) / 1000) * WRITES_PER_SECOND);
      while (sent < due) {
        const target = targets[sent % 2]!;
        const n = sent++;
        const t0 = Date.now();
        const p = fetch(`${target.url}/v1/teams`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `hook-team-${n}` }) })
          .then(async (res) => {
            await res.arrayBuffer();
            statusCodes[res.status] = (statusCodes[res.status] ?? 0) + 1;
            latencies.push(Date.now() - t0);
            if (res.status === 201) acknowledgedAt.set(`hook-team-${n}`, Date.now());
          })
          .catch(() => {
            errors++;
          })
          .finally(() => pending.delete(p));
        pending.add(p);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await Promise.all(pending);
    const loadEnded = Date.now();
    const acknowledged = statusCodes['201'] ?? 0;
    const expected = acknowledged * ENDPOINTS;
    const distinct = () => new Set(receiver.receipts.map((r) => r.key)).size;
    const drainDeadline = Date.now() + DRAIN_LIMIT_MS;
    while (distinct() < expected && Date.now() < drainDeadline) await new Promise((r) => setTimeout(r, 100));
    const drained = Date.now();
    const samples = sampler.stop();

    // The measured window: after the warm-up, until the load stopped.
    const windowStart = started + warmup * 1000;
    const inWindow = receiver.receipts.filter((r) => r.at >= windowStart && r.at <= loadEnded);
    const rate = inWindow.length / ((loadEnded - windowStart) / 1000);
    const delays = receiver.receipts.filter((r) => r.at >= windowStart).map((r) => r.delayMs).sort((a, b) => a - b);
    // From the write's 201 (after its commit) to receipt: a delivery can arrive before the 201 does
    // (negative), so this slightly understates commit → receipt, where createdAt overstates it.
    const afterAck = receiver.receipts
      .filter((r) => r.at >= windowStart && r.name !== null && acknowledgedAt.has(r.name))
      .map((r) => r.at - acknowledgedAt.get(r.name!)!)
      .sort((a, b) => a - b);
    const stored = Number((await ctx.scratch.pool.query("SELECT count(*) AS n FROM webhook_deliveries WHERE event_type = 'team.created'")).rows[0].n);
    const lost = stored - distinct();
    const sortedLatencies = latencies.sort((a, b) => a - b);
    const row: Measurement = {
      label: 'POST /v1/teams (both processes) → deliveries',
      rps: acknowledged / ((loadEnded - started) / 1000),
      p50: percentile(sortedLatencies, 50),
      p99: percentile(sortedLatencies, 99),
      requests: latencies.length,
      errors,
      non2xx: latencies.length - acknowledged,
      statusCodes,
      peakRssMb: samples.reduce((s, x) => s + x.peakRssMb, 0),
      cpuCores: samples.reduce((s, x) => s + x.cpuCores, 0),
      extra: {
        'deliveries/s': rate,
        'delay p50 ms': percentile(delays, 50),
        'delay p99 ms': percentile(delays, 99),
        'delay max ms': delays[delays.length - 1] ?? NaN,
        '201 → receipt p50 ms': percentile(afterAck, 50),
        '201 → receipt p99 ms': percentile(afterAck, 99),
      },
    };
    result.rows.push(row);
    result.checks.push(
      check('deliveries per second while the load ran', rate, '>=', 500),
      check('p99 delay commit → receipt, ms (from createdAt)', percentile(delays, 99), '<=', 1000),
      check('p99 delay commit → receipt, ms (from the write’s 201)', percentile(afterAck, 99), '<=', 1000),
      check('attempts in flight twice', receiver.duplicatesInFlight(), '<=', 0),
      check('lost deliveries (stored deliveries never received)', lost, '<=', 0),
      check('acknowledged writes × endpoints never queued', expected - stored, '<=', 0),
    );
    // Dispatch capacity alone: a backlog queued straight into the outbox (as committed writes
    // leave it, with the NOTIFY), drained by the two processes' dispatchers. This separates what
    // delivery can do from what the write path lets through (one organization's audited writes
    // queue on its audit chain head, so a CPU-starved machine limits the writes first).
    const receivedFromWrites = distinct();
    const receiptsFromWrites = receiver.receipts.length;
    const backlog = await measureBacklog(ctx, org.organizationId, receiver);
    result.rows.push({
      label: `backlog of ${backlog.deliveries} deliveries queued at once → delivered by both processes`,
      rps: backlog.rate,
      p50: NaN,
      p99: NaN,
      requests: backlog.received,
      errors: 0,
      non2xx: 0,
      statusCodes: {},
      peakRssMb: NaN,
      cpuCores: NaN,
      extra: { 'deliveries/s': backlog.rate, 'drain s': backlog.seconds },
    });
    result.checks.push(
      check('dispatch capacity: backlog deliveries per second', backlog.rate, '>=', 500),
      check('backlog deliveries never received', backlog.deliveries - backlog.received, '<=', 0),
    );
    // The delay by second of the load (receipt time): a tail at the start is the fresh processes
    // warming up, one that grows is a queue the dispatchers do not keep up with.
    const bySecond: string[] = [];
    for (let t = started; t < loadEnded; t += 1000) {
      const second = receiver.receipts.filter((r) => r.at >= t && r.at < t + 1000).map((r) => r.delayMs).sort((a, b) => a - b);
      bySecond.push(second.length ? `${percentile(second, 50)}/${percentile(second, 99)}` : '-');
    }
    result.notes.push(`delay p50/p99 ms by second of the load (the first ${warmup} s are warm-up, not measured): ${bySecond.join(', ')}`);
    result.notes.push(
      `${acknowledged} writes acknowledged → ${expected} deliveries expected, ${stored} queued, ${receivedFromWrites} distinct received (${receiptsFromWrites} receipts in all); queue drained ${((drained - loadEnded) / 1000).toFixed(1)} s after the load stopped`,
      'the delay is measured two ways: from the event’s createdAt, stamped inside the write transaction before the write waits for its organization’s audit chain head (so it also counts that wait, which is long when writes queue), and from the write’s 201 (after commit; a delivery may arrive first, so slightly under)',
    );
    return result;
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
    await receiver.close();
  }
}

/** Queues BACKLOG_EVENTS events × the endpoints in one transaction (with the outbox's NOTIFY) and times their delivery. */
async function measureBacklog(ctx: BenchContext, organizationId: string, receiver: Awaited<ReturnType<typeof startReceiver>>) {
  const pool = ctx.scratch.pool;
  const before = new Set(receiver.receipts.map((r) => r.key)).size;
  const client = await pool.connect();
  let deliveries = 0;
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO events (id, organization_id, type, data, created_at)
       SELECT 'evt_backlog_' || i, $1, 'team.created', '{"target":null,"changes":{}}'::jsonb, now() FROM generate_series(1, $2::int) i`,
      [organizationId, BACKLOG_EVENTS],
    );
    const queued = await client.query(
      `INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at, updated_at)
       SELECT 'whd_backlog_' || i || '_' || e.id, $1, e.id, 'evt_backlog_' || i, 'team.backlog', 'pending', now(), now(), now()
       FROM generate_series(1, $2::int) i CROSS JOIN webhook_endpoints e WHERE e.organization_id = $1`,
      [organizationId, BACKLOG_EVENTS],
    );
    deliveries = queued.rowCount ?? 0;
    await client.query("SELECT pg_notify('webhook_deliveries', '')");
    await client.query('COMMIT');
  } finally {
    client.release();
  }
  const started = Date.now();
  const distinct = () => new Set(receiver.receipts.map((r) => r.key)).size - before;
  while (distinct() < deliveries && Date.now() - started < DRAIN_LIMIT_MS) await new Promise((r) => setTimeout(r, 20));
  const seconds = (Date.now() - started) / 1000;
  const received = distinct();
  return { deliveries, received, seconds, rate: received / seconds };
}
