import { randomBytes } from 'node:crypto';
import type { BenchContext } from '../lib/context';
import { cpuExtras, measureRounds, type Measurement } from '../lib/load';
import { sampleProcesses, type Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';
import { startAuditSinks } from '../lib/audit-sinks';

const CONNECTIONS = 4;
const ROUNDS = 4;
/** Entries exported in (b); a smoke-sized run (`--smoke --only=8`) exports 20,000. */
const FULL_EXPORT_ENTRIES = 1_000_000;

/**
 * Scenario 8: the audit log's costs.
 * (a) POST /v1/teams with audit (the service as shipped, its organization streaming its log to two
 *     sinks in the bench process: https with Standard Webhooks signatures and Splunk HEC, delivered
 *     by that process) and without its audit entry (the same build with the benchmark-only switch
 *     AUDIT_BENCH_DISABLE=on: the team and its event, no entry and no chain head; AUDIT_DISPATCH=off,
 *     so it delivers none of the streams), in alternating rounds of the same run: the latency an
 *     audit entry adds to a write (target ≤ 1.3×, issues 18 and 52); then every stream must have
 *     received every entry from its creation on, in chain order. A third process writes the team alone (=entries-and-events:
 *     no event either), the scenario's baseline until the event was measured with the change; its
 *     ratio is printed, without a target.
 * (b) GET /v1/audit-logs/export of 1,000,000 entries (NDJSON), read to the end: peak RSS of the
 *     service above its idle RSS (target < 100 MB) and throughput.
 */
export async function scenarioAudit(ctx: BenchContext): Promise<ScenarioResult> {
  const db = ctx.scratch.database.db;
  const EXPORT_ENTRIES = ctx.smoke ? 20_000 : FULL_EXPORT_ENTRIES;
  const withOrg = await seedOrganization(db, { name: 'Audit On', members: 10, teams: 0 });
  const withoutOrg = await seedOrganization(db, { name: 'Audit Off', members: 10, teams: 0 });
  const aloneOrg = await seedOrganization(db, { name: 'Team Alone', members: 10, teams: 0 });
  const exportOrg = await seedOrganization(db, { name: 'Audit Export', members: 10, teams: 0 });
  const result: ScenarioResult = {
    id: '8',
    title: 'Audit: cost on POST /v1/teams; export of 1,000,000 entries',
    setup: [
      `(a) ${CONNECTIONS} connections of POST /v1/teams (unique names), warmed ${ctx.warmup} s, measured ${ctx.duration} s in ${ROUNDS} alternating rounds; three service processes on the same database: as shipped (team, event, audit entry, chain head) with two audit streams of its organization active (https to a receiver verifying Standard Webhooks signatures, Splunk HEC to a fake checking what HEC checks; both in the bench process, OUTBOUND_ALLOWED_NETWORKS=127.0.0.0/8 on every process), AUDIT_BENCH_DISABLE=on (team and event: the baseline) and =entries-and-events (the team alone: printed, no target), both with AUDIT_DISPATCH=off (the streams are the audited process's work); each writes into its own organization`,
      `(b) ${EXPORT_ENTRIES.toLocaleString('en')} entries inserted into one organization with SQL, then ANALYZE; one GET /v1/audit-logs/export?format=ndjson read to the end by one client; RSS sampled every 50 ms`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const targets: Target[] = [];
  let sinks: Awaited<ReturnType<typeof startAuditSinks>> | null = null;
  try {
    const loopback = { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' };
    const on = await ctx.startService('s8-audit-on', loopback);
    const off = await ctx.startService('s8-audit-off', { ...loopback, AUDIT_BENCH_DISABLE: 'on', AUDIT_DISPATCH: 'off' });
    const alone = await ctx.startService('s8-team-alone', { ...loopback, AUDIT_BENCH_DISABLE: 'entries-and-events', AUDIT_DISPATCH: 'off' });
    targets.push(on, off, alone);
    sinks = await startAuditSinks(on.url, withOrg.callerToken);
    let n = 0;
    const teamLoad = (label: string, target: Target, token: string) => ({
      label,
      url: target.url,
      connections: CONNECTIONS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      targets: [target],
      requests: [
        {
          method: 'POST',
          path: '/v1/teams',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          setupRequest: (req: object) => ({ ...req, body: JSON.stringify({ name: `t-${n++}-${randomBytes(3).toString('hex')}` }) }),
        },
      ],
    });
    const [audited, bare, teamAlone] = (await measureRounds(
      [
        teamLoad('POST /v1/teams, audit on', on, withOrg.callerToken),
        teamLoad('POST /v1/teams, no audit entry (baseline)', off, withoutOrg.callerToken),
        teamLoad('POST /v1/teams, no entry and no event', alone, aloneOrg.callerToken),
      ],
      ROUNDS,
    )) as [Measurement, Measurement, Measurement];
    const drained = await sinks.drained(60_000);
    const deliveries = await sinks.check(ctx.scratch.pool, withOrg.organizationId);
    await sinks.close();
    sinks = null;
    for (const d of deliveries) {
      result.notes.push(`stream ${d.type}: ${d.entries} entries received in ${d.batches} batches (${d.duplicates} again, at least once), ${d.checkpoints} checkpoints; missing ${d.missing}, out of order ${d.outOfOrder}, bad signatures ${d.badSignatures}${drained ? '' : '; not drained within 60 s'}`);
      result.checks.push(check(`stream ${d.type}: entries received`, d.entries, '>=', 1), check(`stream ${d.type}: entries missing, out of order or unsigned`, d.missing + d.outOfOrder + d.badSignatures, '<=', 0));
    }
    const rows = await ctx.scratch.pool.query<{ org: string; entries: string; events: string }>(
      `SELECT o.id AS org, (SELECT count(*) FROM audit_logs a WHERE a.organization_id = o.id) AS entries, (SELECT count(*) FROM events e WHERE e.organization_id = o.id) AS events
       FROM organizations o WHERE o.id = ANY($1)`,
      [[withOrg.organizationId, withoutOrg.organizationId, aloneOrg.organizationId]],
    );
    const written = (org: string) => {
      const row = rows.rows.find((r) => r.org === org);
      return `${row?.entries ?? 0} / ${row?.events ?? 0}`;
    };
    result.notes.push(
      `rows written (entries / events, the seed's organization.created included): audit on ${written(withOrg.organizationId)} for ${audited.requests} requests; no audit entry ${written(withoutOrg.organizationId)} for ${bare.requests}; team alone ${written(aloneOrg.organizationId)}`,
      `p50 / p99 audit on ÷ team alone (no entry, no event; no target): ${(audited.p50 / teamAlone.p50).toFixed(2)} / ${(audited.p99 / teamAlone.p99).toFixed(2)}`,
    );
    // Where each write's CPU went (the service, Postgres, the load generator) and how busy the machine was: a ratio above the CPU ratio is time spent waiting (the chain head's row lock), not working.
    for (const m of [teamAlone, bare, audited]) m.extra = cpuExtras(m);
    result.rows.push(teamAlone, bare, audited);
    result.checks.push(
      check('p50 latency audit on / off', audited.p50 / bare.p50, '<=', 1.3),
      check('p99 latency audit on / off', audited.p99 / bare.p99, '<=', 1.3),
      check('errors + non-2xx', audited.errors + audited.non2xx + bare.errors + bare.non2xx, '<=', 0),
    );
    await Promise.all(targets.splice(0).map((t) => t.stop()));

    // (b) Export.
    const seedStarted = Date.now();
    await ctx.scratch.pool.query(
      `INSERT INTO audit_logs (id, organization_id, seq, action, actor_type, actor_id, actor_member_id, target_type, target_id, changes, request_id, ip, user_agent, created_at, prev_hash, hash)
       SELECT 'aud_01' || lpad(g::text, 24, '0'), $1, g + 1, 'team.created', 'member', 'usr_bench', $2, 'team', 'tem_01' || lpad(g::text, 24, '0'),
         jsonb_build_object('name', jsonb_build_object('from', null, 'to', 'Team number ' || g), 'memberIds', jsonb_build_object('from', null, 'to', '[]'::jsonb)),
         'req-' || g, '127.0.0.1', 'bench/1.0', now() - make_interval(secs => ($3 - g) / 1000.0), repeat('0', 64), repeat('0', 64)
       FROM generate_series(1, $3) AS g`,
      [exportOrg.organizationId, exportOrg.callerMemberId, EXPORT_ENTRIES],
    );
    // The chain head at the last seeded entry: reading the log is audited (audit_log.exported), and its entry follows it.
    await ctx.scratch.pool.query('UPDATE audit_chain_heads SET seq = $2 + 1 WHERE organization_id = $1', [exportOrg.organizationId, EXPORT_ENTRIES]);
    await ctx.scratch.analyze();
    result.notes.push(`export seed: ${EXPORT_ENTRIES.toLocaleString('en')} rows in ${((Date.now() - seedStarted) / 1000).toFixed(0)} s`);
    const service = await ctx.startService('s8-export');
    targets.push(service);
    // Idle: after one small request (so lazy start-up work is done), sampled for 2 s.
    await fetch(`${service.url}/v1/audit-logs?limit=1`, { headers: { authorization: `Bearer ${exportOrg.callerToken}` } });
    const idleSampler = sampleProcesses([service.pid]);
    await new Promise((r) => setTimeout(r, 2000));
    const idle = idleSampler.stop()[0]!;
    const sampler = sampleProcesses([service.pid]);
    const started = process.hrtime.bigint();
    const res = await fetch(`${service.url}/v1/audit-logs/export?format=ndjson`, { headers: { authorization: `Bearer ${exportOrg.callerToken}` } });
    if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}`);
    let bytes = 0;
    let lines = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const during = sampler.stop()[0]!;
    const exported: Measurement = {
      label: 'export 1M entries (NDJSON)',
      rps: lines / seconds,
      p50: NaN,
      p99: NaN,
      requests: 1,
      errors: 0,
      non2xx: 0,
      statusCodes: { '200': 1 },
      peakRssMb: during.peakRssMb,
      cpuCores: during.cpuCores,
      extra: { entries: lines, seconds: Number(seconds.toFixed(1)), 'MB/s': Number((bytes / 1e6 / seconds).toFixed(1)), 'idle RSS MB': Number(idle.peakRssMb.toFixed(0)) },
    };
    result.rows.push(exported);
    result.notes.push(`export: ${lines.toLocaleString('en')} entries, ${(bytes / 1e6).toFixed(0)} MB in ${seconds.toFixed(1)} s (${(lines / seconds).toFixed(0)} entries/s); service RSS idle ${idle.peakRssMb.toFixed(0)} MB, peak ${during.peakRssMb.toFixed(0)} MB`);
    result.checks.push(
      check('export entries', lines, '>=', EXPORT_ENTRIES),
      check('export peak RSS above idle, MB', during.peakRssMb - idle.peakRssMb, '<=', 100),
    );
  } finally {
    await sinks?.close();
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
