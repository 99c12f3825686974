import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import type { OrganizationExportsTable } from './tables';

export const EXPORT_COLUMNS = ['id', 'organization_id', 'requested_by_member_id', 'requested_by_user_id', 'status', 'error', 'size', 'sha256', 'created_at', 'started_at', 'finished_at', 'expires_at', 'files_erased_at'] as const;

/** An export as its routes read it: the table's columns but the lease and attempt counter. */
export type ExportRow = Pick<Selectable<OrganizationExportsTable>, (typeof EXPORT_COLUMNS)[number]>;

/** A new pending export; the partial unique index refuses a second one while one is pending or running (23505). */
export async function insertExport(db: Db, row: { id: string; organizationId: string; memberId: string; userId: string; now: Date }): Promise<ExportRow> {
  return db
    .insertInto('organization_exports')
    .values({ id: row.id, organization_id: row.organizationId, requested_by_member_id: row.memberId, requested_by_user_id: row.userId, status: 'pending', created_at: row.now })
    .returning(EXPORT_COLUMNS)
    .executeTakeFirstOrThrow() as Promise<ExportRow>;
}

export async function findExport(db: Db, organizationId: string, id: string): Promise<ExportRow | undefined> {
  return db.selectFrom('organization_exports').select(EXPORT_COLUMNS).where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst() as Promise<ExportRow | undefined>;
}

/** Newest first (keyset on created_at, id). */
export async function listExports(db: Db, organizationId: string, after: Position | null, take: number): Promise<ExportRow[]> {
  let query = db.selectFrom('organization_exports').select(EXPORT_COLUMNS).where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute() as Promise<ExportRow[]>;
}

/** One chunk of a ready export's zip (null past the last). */
export async function chunkAt(db: Db, exportId: string, seq: number): Promise<Uint8Array | null> {
  const row = await db.selectFrom('organization_export_chunks').select('data').where('export_id', '=', exportId).where('seq', '=', seq).executeTakeFirst();
  return row ? row.data : null;
}

export interface ExportJob {
  id: string;
  organizationId: string;
  requestedByUserId: string;
  createdAt: Date;
  token: string;
}

/**
 * Leases up to `batch` exports due for work: pending ones, and running ones whose holder's lease
 * expired (a process died: the export is built again from the start). One short statement.
 */
export async function claimExports(db: Db, input: { now: Date; leaseUntil: Date; token: string; batch: number }): Promise<ExportJob[]> {
  const { now, leaseUntil, token, batch } = input;
  const { rows } = await sql<{ id: string; organization_id: string; requested_by_user_id: string; created_at: Date }>`
    UPDATE organization_exports e
    SET status = 'running', lease_until = ${leaseUntil}, lease_token = ${token}, started_at = ${now}, attempts = e.attempts + 1
    WHERE e.id IN (
      SELECT d.id FROM organization_exports d
      WHERE d.status = 'pending' OR (d.status = 'running' AND d.lease_until < ${now})
      ORDER BY d.created_at, d.id
      LIMIT ${batch}
      FOR UPDATE SKIP LOCKED)
    RETURNING e.id, e.organization_id, e.requested_by_user_id, e.created_at`.execute(db);
  return rows.map((r) => ({ id: r.id, organizationId: r.organization_id, requestedByUserId: r.requested_by_user_id, createdAt: new Date(r.created_at), token }));
}

/** Keeps the lease while the zip is written; false when it was lost. */
export async function extendLease(db: Db, id: string, token: string, until: Date): Promise<boolean> {
  const row = await db.updateTable('organization_exports').set({ lease_until: until }).where('id', '=', id).where('lease_token', '=', token).where('status', '=', 'running').returning('id').executeTakeFirst();
  return row !== undefined;
}

/** Removes every chunk of an export (a restart's leftovers, a failure's, an expired zip's), in bounded statements. */
export async function deleteChunks(db: Db, exportId: string): Promise<void> {
  for (;;) {
    const result = await sql`DELETE FROM organization_export_chunks WHERE export_id = ${exportId} AND seq IN (SELECT seq FROM organization_export_chunks WHERE export_id = ${exportId} LIMIT 64)`.execute(db);
    if (Number(result.numAffectedRows ?? 0) < 64) return;
  }
}

export async function insertChunk(db: Db, row: { exportId: string; organizationId: string; seq: number; data: Buffer }): Promise<void> {
  await db.insertInto('organization_export_chunks').values({ export_id: row.exportId, organization_id: row.organizationId, seq: row.seq, data: row.data }).execute();
}

/** The outcome, while the lease is still this job's. */
export async function finishExport(db: Db, id: string, token: string, outcome: { status: 'ready'; size: number; sha256: string; expiresAt: Date; now: Date } | { status: 'failed'; error: string; now: Date }): Promise<boolean> {
  const set =
    outcome.status === 'ready'
      ? { status: 'ready' as const, size: String(outcome.size), sha256: outcome.sha256, expires_at: outcome.expiresAt, finished_at: outcome.now, error: null }
      : { status: 'failed' as const, error: outcome.error, finished_at: outcome.now };
  const row = await db
    .updateTable('organization_exports')
    .set({ ...set, lease_until: null, lease_token: null })
    .where('id', '=', id)
    .where('lease_token', '=', token)
    .where('status', '=', 'running')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Ready exports past their expiry whose chunks are still kept. */
export async function expiredExports(db: Db, now: Date, limit: number): Promise<string[]> {
  const rows = await db.selectFrom('organization_exports').select('id').where('files_erased_at', 'is', null).where('expires_at', '<=', now).limit(limit).execute();
  return rows.map((r) => r.id);
}

export async function markErased(db: Db, id: string, now: Date): Promise<void> {
  await db.updateTable('organization_exports').set({ files_erased_at: now }).where('id', '=', id).execute();
}

/** The organization's name (for the mail). */
export async function organizationName(db: Db, organizationId: string): Promise<string | null> {
  return (await db.selectFrom('organizations').select('name').where('id', '=', organizationId).executeTakeFirst())?.name ?? null;
}

export async function userEmail(db: Db, userId: string): Promise<string | null> {
  return (await db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst())?.email ?? null;
}
