import { newId } from '../../src/lib/ids';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';
import type { BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions, type LoopLoad, type Measurement } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const WORKERS = 200;
const STALE_MS = 120_000;
/** The service and the floor take turns in this many rounds, so a drift of the machine's load hits both alike. */
const ROUNDS = 4;

/**
 * Scenario 9: POST /v1/workers/{id}/heartbeat from 200 workers at once (200 connections, each
 * request for the next worker in turn), against the floor: the same rows (the worker's heartbeat
 * columns and its online-interval rollup row) written straight through pg by 200 loops, one
 * UPDATE and one upsert per heartbeat, without the token check. Keep it in step with
 * src/workers/lifecycle-store.ts `recordHeartbeat`.
 */
export async function scenarioHeartbeat(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '9',
    title: 'POST /v1/workers/{id}/heartbeat from 200 workers at once, vs the same rows through pg',
    setup: [
      `${WORKERS} workers of one organization; ${WORKERS} connections (service) / ${WORKERS} concurrent loops on a pg pool of 16 (floor), each warmed up ${ctx.warmup} s, then measured ${ctx.duration} s each in ${ROUNDS} alternating rounds`,
      'each request is the next worker\'s heartbeat with its own x-worker-token and a body {version, openSessions}',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const org = await seedOrganization(db, { name: 'Heartbeat Org', members: 2, teams: 0 });
  const now = new Date();
  const workers = Array.from({ length: WORKERS }, (_, i) => ({ id: newId('worker'), token: randomSecret('cpw'), name: `worker-${i}` }));
  await db
    .insertInto('workers')
    .values(
      workers.map((w) => ({
        id: w.id,
        organization_id: org.organizationId,
        name: w.name,
        description: null,
        runtime_url: null,
        host_token_hash: sha256Hex(w.token),
        host_token_sealed: 'not-used-by-this-scenario',
        created_by_member_id: org.ownerMemberId,
        created_at: now,
        updated_at: now,
        last_activity_at: null,
      })),
    )
    .execute();
  await ctx.scratch.analyze();

  let floorError = '';
  const service = await ctx.startService('s9-service', { WORKER_STALE_AFTER: String(STALE_MS / 1000) });
  try {
    const probe = await fetch(`${service.url}/v1/workers/${workers[0]!.id}/heartbeat`, {
      method: 'POST',
      headers: { 'x-worker-token': workers[0]!.token, 'content-type': 'application/json' },
      body: JSON.stringify({ version: '1.0.0', openSessions: 0 }),
    });
    if (probe.status !== 200) throw new Error(`heartbeat answered ${probe.status}: ${await probe.text()}`);
    let n = 0;
    const requests = [
      {
        method: 'POST',
        path: `/v1/workers/${workers[0]!.id}/heartbeat`,
        setupRequest: (req: object) => {
          const w = workers[n++ % WORKERS]!;
          return {
            ...req,
            path: `/v1/workers/${w.id}/heartbeat`,
            headers: { 'x-worker-token': w.token, 'content-type': 'application/json' },
            body: JSON.stringify({ version: '1.0.0', openSessions: n % 7 }),
          };
        },
      },
    ];
    const serviceLoad: LoadOptions = { label: 'service', url: service.url, connections: WORKERS, duration: ctx.duration, warmup: ctx.warmup, requests, targets: [service] };
    const pool = ctx.scratch.pool;
    let k = 0;
    const floorLoad: LoopLoad = {
      label: 'floor: pg, UPDATE + upsert',
      concurrency: WORKERS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      work: async () => {
        const w = workers[k++ % WORKERS]!;
        const at = new Date();
        try {
          const updated = await pool.query<{ online_since: Date }>(
            `UPDATE workers SET last_heartbeat_at = $2, version = $3, open_sessions = $4, online_since = COALESCE(online_since, $2)
             WHERE id = $1 RETURNING organization_id, online_since`,
            [w.id, at, '1.0.0', k % 7],
          );
          const row = updated.rows[0] as unknown as { organization_id: string; online_since: Date };
          await pool.query(
            `INSERT INTO worker_online_intervals AS i (worker_id, organization_id, started_at, ended_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (worker_id, started_at) DO UPDATE SET ended_at = GREATEST(i.ended_at, EXCLUDED.ended_at)`,
            [w.id, row.organization_id, row.online_since, new Date(at.getTime() + STALE_MS)],
          );
        } catch (err) {
          floorError = err instanceof Error ? err.message : String(err);
          throw err;
        }
      },
    };
    // Measured one after the other, a drift of the machine's load between the two decided the
    // ratio; in rounds it hits both alike (as in scenarios 1, 2, 5 and 11).
    const [measured, floor] = (await measureRounds([serviceLoad, floorLoad], ROUNDS)) as [Measurement, Measurement];
    if (floor.requests === 0) throw new Error(`the floor failed on every heartbeat (${floor.errors} errors): ${floorError}`);
    result.rows.push(measured, floor);
    result.checks.push(
      check('heartbeats/s service / floor', measured.rps / floor.rps, '>=', 0.5),
      check('service errors + non-2xx', measured.errors + measured.non2xx, '<=', 0),
    );
    if (floor.errors > 0) result.notes.push(`floor errors: ${floor.errors} (last: ${floorError})`);
  } finally {
    await service.stop();
  }
  return result;
}
