import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { preparedAs } from '../db/named-statements';
import { WORKER_COLUMNS, type WorkerRow } from './store';
import { organizationUnlocked } from '../principal/organization-lock';

export interface HeartbeatResult {
  stopped: boolean;
}

/**
 * One heartbeat in one statement, token check included: finds the worker by its id and its token's
 * hash (no match → nothing returned: a wrong token, another worker's token, a rotated-away token,
 * a deleted worker, or a worker whose creator is suspended or no longer a member), stamps the server's time and extends the current online interval, or
 * opens a new one when the previous heartbeat is older than the stale window. A stopped worker's
 * row is left as it is. Sent as a prepared statement: it runs on every heartbeat of every worker.
 */
export async function recordHeartbeat(
  db: Db,
  beat: { workerId: string; tokenHash: string; now: Date; staleAfterMs: number; version: string | null; openSessions: number | null },
): Promise<HeartbeatResult | undefined> {
  const staleBoundary = new Date(beat.now.getTime() - beat.staleAfterMs);
  const onlineUntil = new Date(beat.now.getTime() + beat.staleAfterMs);
  const result = await sql<HeartbeatResult>`
    ${preparedAs('worker_heartbeat')}
    WITH prev AS (
      SELECT id, organization_id, stopped_at, last_heartbeat_at, online_since
      FROM workers WHERE id = ${beat.workerId} AND host_token_hash = ${beat.tokenHash}
        AND EXISTS (SELECT 1 FROM members m WHERE m.id = workers.created_by_member_id AND m.removed_at IS NULL AND m.suspended_at IS NULL)
        AND ${organizationUnlocked('workers.organization_id')}
      FOR UPDATE
    ), beat AS (
      UPDATE workers w SET
        last_heartbeat_at = ${beat.now}::timestamptz,
        version = COALESCE(${beat.version}::text, w.version),
        open_sessions = COALESCE(${beat.openSessions}::integer, w.open_sessions),
        online_since = CASE
          WHEN prev.online_since IS NOT NULL AND prev.last_heartbeat_at >= ${staleBoundary}::timestamptz THEN prev.online_since
          ELSE ${beat.now}::timestamptz END
      FROM prev
      WHERE w.id = prev.id AND prev.stopped_at IS NULL
      RETURNING w.id, w.organization_id, w.online_since
    ), rollup AS (
      INSERT INTO worker_online_intervals AS i (worker_id, organization_id, started_at, ended_at)
      SELECT id, organization_id, online_since, ${onlineUntil}::timestamptz FROM beat
      ON CONFLICT (worker_id, started_at) DO UPDATE SET ended_at = GREATEST(i.ended_at, EXCLUDED.ended_at)
    )
    SELECT stopped_at IS NOT NULL AS stopped FROM prev`.execute(db);
  return result.rows[0];
}

/** Marks the worker stopped and ends its current online interval now. */
export async function stopWorker(db: Db, organizationId: string, workerId: string, now: Date): Promise<WorkerRow | undefined> {
  const current = await db
    .selectFrom('workers')
    .select('online_since')
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .executeTakeFirst();
  if (current?.online_since) {
    await db
      .updateTable('worker_online_intervals')
      .set({ ended_at: sql<Date>`LEAST(ended_at, GREATEST(started_at, ${now}::timestamptz))` })
      .where('worker_id', '=', workerId)
      .where('started_at', '=', current.online_since)
      .execute();
  }
  return db
    .updateTable('workers')
    .set({ stopped_at: now, online_since: null, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .returning(WORKER_COLUMNS)
    .executeTakeFirst();
}

export async function startWorker(db: Db, organizationId: string, workerId: string, now: Date): Promise<WorkerRow | undefined> {
  return db
    .updateTable('workers')
    .set({ stopped_at: null, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .returning(WORKER_COLUMNS)
    .executeTakeFirst();
}

export async function replaceToken(db: Db, organizationId: string, workerId: string, token: { hash: string; sealed: string; now: Date }): Promise<boolean> {
  const row = await db
    .updateTable('workers')
    .set({ host_token_hash: token.hash, host_token_sealed: token.sealed, updated_at: token.now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Locks the worker row for a lifecycle change (stop, start, rotate). */
export async function findWorkerForUpdate(db: Db, organizationId: string, workerId: string): Promise<WorkerRow | undefined> {
  return db.selectFrom('workers').select(WORKER_COLUMNS).where('organization_id', '=', organizationId).where('id', '=', workerId).forUpdate().executeTakeFirst();
}

/** The workers a member of the user created, in any organization, locked (their tokens are about to be replaced). */
export async function lockWorkersCreatedByUser(db: Db, userId: string): Promise<{ id: string; organization_id: string }[]> {
  return db
    .selectFrom('workers')
    .select(['id', 'organization_id'])
    .where('created_by_member_id', 'in', (eb) => eb.selectFrom('members').select('id').where('user_id', '=', userId))
    .forUpdate()
    .execute();
}
