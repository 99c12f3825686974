import type pg from 'pg';
import type { BenchContext } from '../lib/context';
import { percentile, type Measurement } from '../lib/load';
import type { Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { pacedReads, startTransactionSampler, type TransactionSample } from '../lib/xact-sampler';
import { seedOrganization } from '../seed/org';
import { seedPurgeOrganization } from '../seed/purge-org';
import { PURGE_STEPS } from '../../src/org/registry';

const FULL = { members: 100_000, auditEntries: 1_000_000, events: 100_000, telemetryEvents: 50_000, small: 1_000 };
const SMOKE = { members: 2_000, auditEntries: 20_000, events: 2_000, telemetryEvents: 2_000, small: 50 };
/** The bound on the longest transaction of the deletion's background work. */
const LONGEST_TRANSACTION_MS = 1000;
/** Concurrent reads of another organization: loops, and one request per loop every so many ms. */
const READERS = 4;
const READ_EVERY_MS = 20;
const PHASE_LIMIT_MS = 20 * 60_000;

/**
 * Rows of the organization in every table, found as the purge's tests find them: each table of
 * the schema with an `organization_id` column (information_schema), the registry's `delete-via`
 * children through the parent rows named in `parents`, and its `detach` pointers.
 */
async function rowsOf(client: pg.Pool | pg.Client, organizationId: string, parents: Record<string, string[]>): Promise<Record<string, number>> {
  const { rows: tables } = await client.query<{ table_name: string }>(
    `SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
     WHERE c.table_schema = 'public' AND c.column_name = 'organization_id' ORDER BY 1`,
  );
  const counts: Record<string, number> = {};
  const count = async (label: string, text: string, values: unknown[]) => {
    counts[label] = Number((await client.query<{ n: string }>(text, values)).rows[0]!.n);
  };
  for (const { table_name: table } of tables) await count(table, `SELECT count(*) AS n FROM "${table}" WHERE organization_id = $1`, [organizationId]);
  await count('organizations', 'SELECT count(*) AS n FROM organizations WHERE id = $1', [organizationId]);
  for (const step of PURGE_STEPS) {
    if (step.kind === 'delete-via') await count(step.table, `SELECT count(*) AS n FROM "${step.table}" WHERE "${step.column}" = ANY($1)`, [parents[step.parent] ?? []]);
    if (step.kind === 'detach') await count(`${step.table}.${step.column}`, `SELECT count(*) AS n FROM "${step.table}" WHERE "${step.column}" = $1`, [organizationId]);
  }
  return counts;
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
const secondsSince = (t0: number) => (Date.now() - t0) / 1000;
const describe = (s: TransactionSample) =>
  `${s.seen} transactions seen in ${s.polls} polls (every ${s.meanGapMs.toFixed(0)} ms); longest: ${s.longest.map((t) => `${t.ageMs.toFixed(0)} ms (${t.state}: ${t.query.slice(0, 90)})`).join('; ')}; longest lock wait ${s.longestLockWaitMs.toFixed(0)} ms`;

async function until(client: pg.Client, service: Target, text: string, values: unknown[], what: string): Promise<void> {
  const deadline = Date.now() + PHASE_LIMIT_MS;
  while ((await client.query(text, values)).rowCount === 0) {
    if (service.child.exitCode !== null) throw new Error(`${what}: the service exited (${service.child.exitCode}); see ${service.logFile}`);
    if (Date.now() > deadline) throw new Error(`${what}: not done after ${PHASE_LIMIT_MS / 60_000} minutes`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function readRow(label: string, reads: { latencies: number[]; failures: number }, seconds: number): Measurement {
  const sorted = [...reads.latencies].sort((a, b) => a - b);
  return { label, rps: sorted.length / seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99), requests: sorted.length, errors: reads.failures, non2xx: 0, statusCodes: {}, peakRssMb: null, cpuCores: null };
}

/**
 * Scenario 20: deleting an organization of 100,000 members and 1,000,000 audit entries
 * (docs/organization-deletion.md). DELETE /v1/org through HTTP; the lifecycle job of the one
 * service process mails the members, then, once `purge_at` is moved to now (the grace period
 * over), purges. Meanwhile the bench polls pg_stat_activity every 20 ms for the longest open
 * transaction of the service's connections, and another organization's owner reads GET /v1/org
 * at a steady pace. Then no row of the organization may be left in any table.
 */
export async function scenarioPurge(ctx: BenchContext): Promise<ScenarioResult> {
  const size = ctx.smoke ? SMOKE : FULL;
  const db = ctx.scratch.database.db;
  const result: ScenarioResult = {
    id: '20',
    title: `Purge of an organization of ${size.members.toLocaleString('en')} members and ${size.auditEntries.toLocaleString('en')} audit entries`,
    setup: [
      `seeded set-based (seed/purge-org.ts): ${size.members.toLocaleString('en')} members (each with a session whose active organization it is), "Everyone" and 20 small teams, ${size.auditEntries.toLocaleString('en')} audit entries, ${size.events.toLocaleString('en')} events with a delivery each, ${size.telemetryEvents.toLocaleString('en')} telemetry events through ingestion, ${size.small.toLocaleString('en')} each of invitations, API keys, SAML replay guards and SCIM-made accounts, directory users, a SCIM token; then ANALYZE`,
      `one service process as shipped (MAIL_DISPATCH=off: the notices stay queued), ORG_PURGE_BATCH at its default; DELETE /v1/org by the owner; the notices; then purge_at moved to now and the job woken (NOTIFY)`,
      `pg_stat_activity polled every 20 ms on the scratch database: the longest open transaction of the service's connections, per phase (target < ${LONGEST_TRANSACTION_MS} ms)`,
      `${READERS} loops reading GET /v1/org of another organization (50 members, 20 teams), one request each every ${READ_EVERY_MS} ms: 5 s before the deletion, then throughout`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const seedStarted = Date.now();
  const reader = await seedOrganization(db, { name: 'Reader Co', members: 50, teams: 20 });
  const victim = await seedPurgeOrganization(db, { name: 'Leaving Co', ...size });
  await ctx.scratch.analyze();
  const parents = { sso_connections: [victim.samlConnectionId] };
  const before = await rowsOf(ctx.scratch.pool, victim.organizationId, parents);
  const readerBefore = await rowsOf(ctx.scratch.pool, reader.organizationId, {});
  const nonEmpty = Object.entries(before).filter(([, n]) => n > 0);
  result.notes.push(`seed: ${sum(before).toLocaleString('en')} rows of the organization in ${nonEmpty.length} tables in ${secondsSince(seedStarted).toFixed(0)} s (${nonEmpty.map(([t, n]) => `${t} ${n}`).join(', ')})`);

  const targets: Target[] = [];
  let sampler: Awaited<ReturnType<typeof startTransactionSampler>> | null = null;
  let during: ReturnType<typeof pacedReads> | null = null;
  try {
    const service = await ctx.startService('s20-purge', { MAIL_DISPATCH: 'off' });
    targets.push(service);
    const read = () => fetch(`${service.url}/v1/org`, { headers: { authorization: `Bearer ${reader.callerToken}` } });
    const warm = pacedReads(read, READERS, READ_EVERY_MS);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await warm.stop();
    const baseline = pacedReads(read, READERS, READ_EVERY_MS);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    result.rows.push(readRow('GET /v1/org of another organization, before the deletion', await baseline.stop(), 5));

    during = pacedReads(read, READERS, READ_EVERY_MS);
    const readsStarted = Date.now();
    sampler = await startTransactionSampler(ctx.scratch.url);
    const deleted = Date.now();
    const res = await fetch(`${service.url}/v1/org`, { method: 'DELETE', headers: { authorization: `Bearer ${victim.ownerToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ confirm: 'Leaving Co' }) });
    const deleteMs = Date.now() - deleted;
    if (res.status !== 202) throw new Error(`DELETE /v1/org answered ${res.status}: ${await res.text()}`);
    await sampler.client.query('NOTIFY org_lifecycle');
    await until(sampler.client, service, 'SELECT 1 FROM organizations WHERE id = $1 AND deletion_notices_done_at IS NOT NULL', [victim.organizationId], 'notices');
    const noticesSeconds = secondsSince(deleted);
    const notices = await sampler.stop();

    sampler = await startTransactionSampler(ctx.scratch.url);
    const purgeStarted = Date.now();
    await sampler.client.query('UPDATE organizations SET purge_at = now() WHERE id = $1', [victim.organizationId]);
    await sampler.client.query('NOTIFY org_lifecycle');
    await until(sampler.client, service, 'SELECT 1 FROM organization_tombstones WHERE organization_id = $1', [victim.organizationId], 'purge');
    const purgeSeconds = secondsSince(purgeStarted);
    const purge = await sampler.stop();
    const reads = await during.stop();
    const readRowDuring = readRow('GET /v1/org of another organization, during notices and purge', reads, secondsSince(readsStarted));
    result.rows.push(readRowDuring, {
      label: 'purge',
      rps: sum(before) / purgeSeconds,
      p50: NaN,
      p99: NaN,
      requests: 1,
      errors: 0,
      non2xx: 0,
      statusCodes: { '202': 1 },
      peakRssMb: null,
      cpuCores: null,
      extra: { 'rows': sum(before), 'purge s': Number(purgeSeconds.toFixed(1)), 'longest xact ms': Math.round(purge.longest[0]?.ageMs ?? 0), 'notices s': Number(noticesSeconds.toFixed(1)), 'notices longest xact ms': Math.round(notices.longest[0]?.ageMs ?? 0) },
    });

    const after = await rowsOf(ctx.scratch.pool, victim.organizationId, parents);
    const kept = new Set(PURGE_STEPS.filter((s) => s.kind === 'keep').map((s) => s.table));
    const left = Object.entries(after).filter(([table, n]) => n > 0 && !kept.has(table));
    const readerAfter = await rowsOf(ctx.scratch.pool, reader.organizationId, {});
    const readerChanged = Object.keys(readerBefore).filter((t) => (readerAfter[t] ?? 0) < readerBefore[t]!);
    const users = Number((await ctx.scratch.pool.query<{ n: string }>(`SELECT count(*) AS n FROM users WHERE email LIKE '%@large.bench.test'`)).rows[0]!.n);
    result.notes.push(
      `DELETE /v1/org answered 202 in ${deleteMs} ms`,
      `notices (${size.members.toLocaleString('en')} members mailed, 200 per transaction): ${noticesSeconds.toFixed(1)} s; ${describe(notices)}`,
      `purge: ${sum(before).toLocaleString('en')} rows in ${purgeSeconds.toFixed(1)} s (${(sum(before) / purgeSeconds).toFixed(0)} rows/s); ${describe(purge)}`,
      `left after the purge: ${left.length === 0 ? 'nothing' : left.map(([t, n]) => `${t} ${n}`).join(', ')}; the other organization lost rows in: ${readerChanged.length === 0 ? 'no table' : readerChanged.join(', ')}; the members' accounts kept: ${users.toLocaleString('en')}`,
    );
    result.checks.push(
      check('longest transaction during the purge, ms', purge.longest[0]?.ageMs ?? 0, '<=', LONGEST_TRANSACTION_MS),
      check('longest transaction during the notices, ms', notices.longest[0]?.ageMs ?? 0, '<=', LONGEST_TRANSACTION_MS),
      check('rows of the organization left (the tombstone apart)', sum(Object.fromEntries(left)), '<=', 0),
      check('tables where the other organization lost rows', readerChanged.length, '<=', 0),
      check('members\' accounts kept', users, '>=', size.members - 2),
      check('reads failed during the deletion', reads.failures, '<=', 0),
    );
  } finally {
    await sampler?.stop();
    await during?.stop();
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
