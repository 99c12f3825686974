import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

export interface WorkerRow {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  runtime_url: string | null;
  created_by_member_id: string;
  created_at: Date;
  updated_at: Date;
  last_activity_at: Date | null;
  last_heartbeat_at: Date | null;
  online_since: Date | null;
  version: string | null;
  stopped_at: Date | null;
  /** The most the worker's own OAuth tokens may do (permission keys), read with its creator's permissions. */
  ceiling: string[];
}

/** Never the token hash or the sealed token: those are read only where they are needed. */
export const WORKER_COLUMNS = [
  'id',
  'organization_id',
  'name',
  'description',
  'runtime_url',
  'created_by_member_id',
  'created_at',
  'updated_at',
  'last_activity_at',
  'last_heartbeat_at',
  'online_since',
  'version',
  'stopped_at',
  'ceiling',
] as const;

export async function insertWorker(
  db: Db,
  worker: {
    id: string;
    organizationId: string;
    name: string;
    description: string | null;
    runtimeUrl: string | null;
    tokenHash: string;
    tokenSealed: string;
    createdByMemberId: string;
    now: Date;
  },
): Promise<WorkerRow> {
  return db
    .insertInto('workers')
    .values({
      id: worker.id,
      organization_id: worker.organizationId,
      name: worker.name,
      description: worker.description,
      runtime_url: worker.runtimeUrl,
      host_token_hash: worker.tokenHash,
      host_token_sealed: worker.tokenSealed,
      created_by_member_id: worker.createdByMemberId,
      created_at: worker.now,
      updated_at: worker.now,
      last_activity_at: null,
    })
    .returning(WORKER_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function findWorker(db: Db, organizationId: string, workerId: string): Promise<WorkerRow | undefined> {
  return db.selectFrom('workers').select(WORKER_COLUMNS).where('organization_id', '=', organizationId).where('id', '=', workerId).executeTakeFirst();
}

/** The worker and its sealed host token, for calling its runtime. */
export async function findWorkerWithSealedToken(
  db: Db,
  organizationId: string,
  workerId: string,
): Promise<(WorkerRow & { host_token_sealed: string }) | undefined> {
  return db
    .selectFrom('workers')
    .select([...WORKER_COLUMNS, 'host_token_sealed'])
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .executeTakeFirst();
}

export async function listWorkers(db: Db, organizationId: string, after: Position | null, take: number): Promise<(WorkerRow & Position)[]> {
  let query = db.selectFrom('workers').select([...WORKER_COLUMNS, 'created_at as createdAt']).where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

export async function updateWorker(
  db: Db,
  organizationId: string,
  workerId: string,
  changes: { name?: string; description?: string | null; runtimeUrl?: string | null; now: Date },
): Promise<WorkerRow | undefined> {
  return db
    .updateTable('workers')
    .set({
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.runtimeUrl !== undefined ? { runtime_url: changes.runtimeUrl } : {}),
      updated_at: changes.now,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .returning(WORKER_COLUMNS)
    .executeTakeFirst();
}

export async function setCeiling(db: Db, organizationId: string, workerId: string, ceiling: string[], now: Date): Promise<WorkerRow | undefined> {
  return db
    .updateTable('workers')
    .set({ ceiling, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .returning(WORKER_COLUMNS)
    .executeTakeFirst();
}

export async function deleteWorker(db: Db, organizationId: string, workerId: string): Promise<boolean> {
  const result = await db.deleteFrom('workers').where('organization_id', '=', organizationId).where('id', '=', workerId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The worker a host token belongs to, by the token's hash (an index lookup, no string compare). */
export interface ActivityRow {
  id: string;
  worker_id: string;
  type: string;
  occurred_at: Date;
  detail: Record<string, unknown> | null;
  received_at: Date;
}

export async function insertActivity(
  db: Db,
  rows: { id: string; organizationId: string; workerId: string; type: string; at: Date; detail: Record<string, unknown> | null; now: Date }[],
): Promise<void> {
  await db
    .insertInto('worker_activity')
    .values(
      rows.map((r) => ({
        id: r.id,
        organization_id: r.organizationId,
        worker_id: r.workerId,
        type: r.type,
        occurred_at: r.at,
        detail: r.detail === null ? null : JSON.stringify(r.detail),
        received_at: r.now,
      })),
    )
    .execute();
}

/** Records activity time (and locks the row); undefined when the worker no longer exists. */
export async function touchWorker(db: Db, organizationId: string, workerId: string, at: Date): Promise<{ stopped: boolean } | undefined> {
  const row = await db
    .updateTable('workers')
    .set({ last_activity_at: at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', workerId)
    .returning('stopped_at')
    .executeTakeFirst();
  return row && { stopped: row.stopped_at !== null };
}

/** Newest first by the event's own time; the cursor position is (occurred_at, id). */
export async function listActivity(
  db: Db,
  organizationId: string,
  workerId: string,
  after: Position | null,
  take: number,
): Promise<(ActivityRow & Position)[]> {
  let query = db
    .selectFrom('worker_activity')
    .select(['id', 'worker_id', 'type', 'occurred_at', 'detail', 'received_at', 'occurred_at as createdAt'])
    .where('organization_id', '=', organizationId)
    .where('worker_id', '=', workerId);
  if (after) query = query.where(before('occurred_at', 'id', after));
  const rows = await query.orderBy('occurred_at', 'desc').orderBy('id', 'desc').limit(take).execute();
  return rows as (ActivityRow & Position)[];
}
