import { sql } from 'kysely';
import type { Db } from '../db/schema';

export interface WorkerUsageRow {
  worker_id: string;
  name: string | null;
  online_ms: string | number;
}

/**
 * Online milliseconds per worker within [start, cap): each stored interval clipped to the window.
 * Reads the intervals that end after the window starts (index on organization_id, ended_at), so
 * the cost follows the number of online runs, not of heartbeats.
 */
export async function workerOnlineMs(db: Db, organizationId: string, start: Date, cap: Date): Promise<WorkerUsageRow[]> {
  const result = await sql<WorkerUsageRow>`
    SELECT i.worker_id, w.name,
      sum((extract(epoch FROM (LEAST(i.ended_at, ${cap}::timestamptz) - GREATEST(i.started_at, ${start}::timestamptz))) * 1000)::bigint) AS online_ms
    FROM worker_online_intervals i
    LEFT JOIN workers w ON w.id = i.worker_id AND w.organization_id = i.organization_id
    WHERE i.organization_id = ${organizationId} AND i.ended_at > ${start}::timestamptz AND i.started_at < ${cap}::timestamptz
    GROUP BY i.worker_id, w.name
    ORDER BY i.worker_id`.execute(db);
  return result.rows;
}

/** Distinct members with telemetry in [start, end), from the hourly rollup analytics reads (months are whole hours). */
export async function activeMembers(db: Db, organizationId: string, start: Date, end: Date): Promise<number> {
  const result = await sql<{ n: string }>`
    SELECT count(DISTINCT member_id) AS n FROM telemetry_hourly_sessions
    WHERE organization_id = ${organizationId} AND hour >= ${start}::timestamptz AND hour < ${end}::timestamptz`.execute(db);
  return Number(result.rows[0]?.n ?? 0);
}
