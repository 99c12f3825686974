import { sql, type Kysely } from 'kysely';
import { randomBytes } from 'node:crypto';
import type { DB } from '../../src/db/schema';
import { newId } from '../../src/lib/ids';
import { writeBatch } from '../../src/telemetry/ingest';
import type { EventRow } from '../../src/telemetry/ingest-store';

export interface TelemetrySeedOptions {
  organizationId: string;
  /** Members the events belong to (existing rows of `members` in the organization). */
  memberIds: string[];
  /** Number of events to write. */
  events: number;
  /** Spread over the `days` before `now`, evenly by session. */
  days: number;
  now?: Date;
  /** Events per session (default 20); a session's events lie within minutes of each other. */
  eventsPerSession?: number;
  /** Each session's first event is tagged `{type: 'team', value: 'team-<n>'}`, n < teams (default 5). */
  teams?: number;
  /** Events per ingested batch of one member (default 5000). */
  batch?: number;
  /** Batches written at once, each in its own transaction (default 3). */
  concurrency?: number;
}

export interface TelemetrySeedResult {
  events: number;
  sessions: number;
  /** Prefix of the seeded session ids, unique per call. */
  tag: string;
}

const TASK_MIX = ['task.started', 'task.started', 'task.started', 'task.completed', 'task.completed', 'task.completed',
  'task.failed', 'session.active', 'user.active', 'task.completed'] as const;

/**
 * Seeds telemetry for one organization through ingestion's own write path (`writeBatch` of
 * src/telemetry/ingest.ts: the events, session tags, hourly rollup and summaries in one
 * transaction per batch), so the seeded tables hold exactly what ingestion would have left and
 * the rollup rules exist once. Batches are per member and larger than the API allows, to keep a
 * million events to a few hundred transactions, a few of them at once.
 *
 * The mix per session: `session.started` (tagged with a team), then task.started /
 * task.completed (duration up to 10 min) / task.failed / session.active / user.active, and
 * `session.ended` last. Deterministic for given options except for the ids.
 */
export async function seedTelemetry(db: Kysely<DB>, options: TelemetrySeedOptions): Promise<TelemetrySeedResult> {
  if (options.memberIds.length === 0) throw new Error('seedTelemetry needs at least one member');
  const now = options.now ?? new Date();
  const perSession = Math.max(2, options.eventsPerSession ?? 20);
  const teams = Math.max(1, options.teams ?? 5);
  const batchSize = options.batch ?? 5000;
  const sessions = Math.ceil(options.events / perSession);
  const tag = `s${randomBytes(4).toString('hex')}`;
  const spanMs = options.days * 86_400_000;
  const members = options.memberIds;
  const org = options.organizationId;

  const concurrency = Math.max(1, options.concurrency ?? 3);

  const buckets = new Map<string, EventRow[]>();
  const inFlight = new Set<Promise<void>>();
  const flush = async (memberId: string) => {
    const rows = buckets.get(memberId);
    if (!rows || rows.length === 0) return;
    buckets.set(memberId, []);
    const write = writeBatch(db, org, memberId, now, rows).finally(() => inFlight.delete(write));
    inFlight.add(write);
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  };
  for (let g = 0; g < options.events; g++) {
    const s = Math.floor(g / perSession);
    const k = g % perSession;
    const memberId = members[(s * 2654435761) % members.length]!;
    const type = k === 0 ? 'session.started' : k === perSession - 1 ? 'session.ended' : TASK_MIX[(g * 7) % 10]!;
    const occurredAt = new Date(Math.round(now.getTime() - (spanMs * (s + 0.5)) / sessions + (k - perSession) * 30_000));
    const rows = buckets.get(memberId) ?? [];
    buckets.set(memberId, rows);
    rows.push({
      id: newId('telemetryEvent'),
      organizationId: org,
      memberId,
      type,
      occurredAt,
      receivedAt: now,
      sessionId: `${tag}-${s}`,
      durationMs: type === 'task.completed' ? (g * 7919) % 600_000 : null,
      success: type === 'task.completed' ? true : type === 'task.failed' ? false : null,
      dimensions: k === 0 ? [{ type: 'team', value: `team-${s % teams}` }] : [],
    });
    if (rows.length >= batchSize) await flush(memberId);
  }
  for (const memberId of buckets.keys()) await flush(memberId);
  await Promise.all(inFlight);

  // As autovacuum would have after this many inserts: visibility map set, so the narrow summary
  // indexes are read index-only (the per-dimension summaries too; the raw events are left as
  // inserted, so the partial hours' index-only reads visit the heap as they do for fresh events).
  for (const table of ['telemetry_sessions', 'telemetry_daily_members', 'telemetry_daily_totals', 'telemetry_weekly_counts', 'telemetry_hourly_sessions', 'telemetry_five_minute_sessions',
    'telemetry_dimension_sessions', 'telemetry_dimension_daily_members', 'telemetry_dimension_daily_totals', 'telemetry_dimension_weekly_counts', 'telemetry_dimension_hourly']) {
    await sql`VACUUM (ANALYZE) ${sql.table(table)}`.execute(db);
  }

  return { events: options.events, sessions, tag };
}
