import { randomBytes } from 'node:crypto';
import { newId } from '../../src/lib/ids';
import type { BenchContext } from '../lib/context';
import { measure, measureLoop } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const BATCH = 50;
const CONNECTIONS = 8;
const TYPES = ['session.started', 'task.started', 'task.completed', 'task.failed', 'session.active', 'user.active', 'task.completed', 'task.started'];

export interface BenchEvent {
  type: string;
  timestamp: string;
  sessionId: string;
  durationMs?: number;
  success?: boolean;
  dimensions?: { type: string; value: string }[];
}

/** A 50-event batch of one new session (so concurrent batches do not queue on one rollup row). */
export function eventBatch(prefix: string, n: number): BenchEvent[] {
  const sessionId = `${prefix}-${n}-${randomBytes(4).toString('hex')}`;
  const base = Date.now() - 60_000;
  return Array.from({ length: BATCH }, (_, i) => {
    const type = i === 0 ? 'session.started' : i === BATCH - 1 ? 'session.ended' : TYPES[i % TYPES.length]!;
    return {
      type,
      timestamp: new Date(base + i * 1000).toISOString(),
      sessionId,
      ...(type === 'task.completed' ? { durationMs: 1000 + i * 10, success: true } : {}),
      ...(i === 0 ? { dimensions: [{ type: 'team', value: `team-${n % 5}` }] } : {}),
    };
  });
}

/** Autocannon requests posting a fresh batch each time. */
export function ingestRequests(token: string, prefix: string) {
  let n = 0;
  return [
    {
      method: 'POST',
      path: '/v1/telemetry/ingest',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      setupRequest: (req: object) => ({ ...req, body: JSON.stringify({ events: eventBatch(prefix, n++) }) }),
    },
  ];
}

/**
 * Scenario 5: POST /v1/telemetry/ingest with 50-event batches, against the floor: the rows the
 * service writes for a batch (events in one multi-row INSERT, the session's dimension tag, the
 * hourly rollup, the weekly keys and the weekly totals) written straight through pg in one
 * transaction by as many loops. Keep it in step with src/telemetry/service.ts `ingest`.
 */
export async function scenarioIngest(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '5',
    title: 'POST /v1/telemetry/ingest, 50-event batches, vs the same rows through pg',
    setup: [
      `${CONNECTIONS} connections (service) / ${CONNECTIONS} concurrent loops on a pg pool (floor), ${ctx.warmup} s warm-up + ${ctx.duration} s measured each`,
      'each batch is a new session of 50 events (types mixed, one dimension tag), built per request; all batches are one member\'s, in the current ISO week (so they share its weekly-totals row, as real traffic of one organization does)',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const org = await seedOrganization(ctx.scratch.database.db, { name: 'Ingest Org', members: 20, teams: 2 });
  await ctx.scratch.analyze();
  const service = await ctx.startService('s5-service');
  try {
    const probe = await fetch(`${service.url}/v1/telemetry/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: eventBatch('probe', 0) }),
    });
    if (probe.status === 501) {
      result.skipped = 'POST /v1/telemetry/ingest is not implemented yet';
      return result;
    }
    if (probe.status !== 202) throw new Error(`ingest answered ${probe.status}: ${await probe.text()}`);
    const m = await measure({ label: 'service', url: service.url, connections: CONNECTIONS, duration: ctx.duration, warmup: ctx.warmup, requests: ingestRequests(org.callerToken, 's5'), targets: [service] });
    m.extra = { events_per_s: m.rps * BATCH };
    result.rows.push(m);
  } finally {
    await service.stop();
  }

  const pool = ctx.scratch.pool;
  let n = 0;
  let floorError = '';
  const floor = await measureLoop(
    'floor: pg, one transaction',
    CONNECTIONS,
    ctx.duration,
    async () => {
      const events = eventBatch('floor', n++);
      const now = new Date();
      const values: unknown[] = [];
      const tuples = events.map((e, i) => {
        values.push(newId('telemetryEvent'), e.type, e.timestamp, e.durationMs ?? null, e.success ?? null, JSON.stringify(e.dimensions ?? []));
        const b = i * 6;
        const shared = BATCH * 6;
        return `($${b + 1}, $${shared + 1}, $${shared + 2}, $${b + 2}, $${b + 3}, $${shared + 3}, $${shared + 4}, $${b + 4}, $${b + 5}, $${b + 6}::jsonb)`;
      });
      values.push(org.organizationId, org.callerMemberId, now, events[0]!.sessionId);
      const completed = events.filter((e) => e.type === 'task.completed');
      const failed = events.filter((e) => e.type === 'task.failed').length;
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          `INSERT INTO telemetry_events (id, organization_id, member_id, type, occurred_at, received_at, session_id, duration_ms, success, dimensions) VALUES ${tuples.join(', ')}`,
          values,
        );
        await client.query(`INSERT INTO telemetry_session_dimensions (organization_id, type, value, session_id) VALUES ($1, 'team', $2, $3) ON CONFLICT DO NOTHING`, [
          org.organizationId,
          events[0]!.dimensions![0]!.value,
          events[0]!.sessionId,
        ]);
        const at = new Date(events[0]!.timestamp);
        const hour = new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000);
        const week = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() - ((at.getUTCDay() + 6) % 7))).toISOString().slice(0, 10);
        await client.query(
          `INSERT INTO telemetry_hourly_sessions (organization_id, hour, member_id, session_key, events, tasks_completed, tasks_failed, completed_duration_sum, completed_duration_count)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (organization_id, hour, member_id, session_key) DO UPDATE SET events = telemetry_hourly_sessions.events + excluded.events,
             tasks_completed = telemetry_hourly_sessions.tasks_completed + excluded.tasks_completed, tasks_failed = telemetry_hourly_sessions.tasks_failed + excluded.tasks_failed,
             completed_duration_sum = telemetry_hourly_sessions.completed_duration_sum + excluded.completed_duration_sum,
             completed_duration_count = telemetry_hourly_sessions.completed_duration_count + excluded.completed_duration_count`,
          [org.organizationId, hour, org.callerMemberId, events[0]!.sessionId, BATCH, completed.length, failed, completed.reduce((s, e) => s + (e.durationMs ?? 0), 0), completed.length],
        );
        const firstSeen = await client.query(
          `INSERT INTO telemetry_weekly_keys (organization_id, week, kind, key) VALUES ($1, $2, 'm', $3), ($1, $2, 's', $4) ON CONFLICT DO NOTHING RETURNING kind`,
          [org.organizationId, week, org.callerMemberId, events[0]!.sessionId],
        );
        const seen = (kind: string) => firstSeen.rows.filter((r: { kind: string }) => r.kind === kind).length;
        await client.query(
          `INSERT INTO telemetry_weekly_totals (organization_id, week, active_members, sessions, tasks_completed, tasks_failed) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (organization_id, week) DO UPDATE SET active_members = telemetry_weekly_totals.active_members + excluded.active_members,
             sessions = telemetry_weekly_totals.sessions + excluded.sessions, tasks_completed = telemetry_weekly_totals.tasks_completed + excluded.tasks_completed,
             tasks_failed = telemetry_weekly_totals.tasks_failed + excluded.tasks_failed`,
          [org.organizationId, week, seen('m'), seen('s'), completed.length, failed],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        floorError = err instanceof Error ? err.message : String(err);
        throw err;
      } finally {
        client.release();
      }
    },
    ctx.warmup,
  );
  if (floor.requests === 0) throw new Error(`the floor failed on every batch (${floor.errors} errors): ${floorError}`);
  floor.extra = { events_per_s: floor.rps * BATCH };
  result.rows.push(floor);
  const measured = result.rows[0]!;
  result.checks.push(
    check('events/s service / floor', measured.rps / floor.rps, '>=', 0.5),
    check('service errors + non-2xx', measured.errors + measured.non2xx, '<=', 0),
  );
  if (floor.errors > 0) result.notes.push(`floor errors: ${floor.errors} (last: ${floorError})`);
  return result;
}
