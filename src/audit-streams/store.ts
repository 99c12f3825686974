import type { Selectable } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import type { AuditStreamsTable, StreamType } from './tables';

/** The columns the API reads (the sealed secrets only where a PATCH merges them). */
const COLUMNS = ['id', 'type', 'config', 'enabled', 'cursor_seq', 'cursor_id', 'last_delivered_at', 'last_error', 'failing_since', 'paused_at', 'created_at', 'updated_at'] as const;

export type StreamRow = Pick<Selectable<AuditStreamsTable>, (typeof COLUMNS)[number]>;

export async function insertStream(
  db: Db,
  s: { id: string; organizationId: string; type: StreamType; config: Record<string, unknown>; secretsSealed: string; enabled: boolean; cursorSeq: string; now: Date },
): Promise<StreamRow> {
  return db
    .insertInto('audit_streams')
    .values({
      id: s.id,
      organization_id: s.organizationId,
      type: s.type,
      config: JSON.stringify(s.config),
      secrets_sealed: s.secretsSealed,
      enabled: s.enabled,
      cursor_seq: s.cursorSeq,
      checkpoint_seq: s.cursorSeq,
      next_attempt_at: s.now,
      created_at: s.now,
      updated_at: s.now,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

/** Newest first (keyset on created_at, id). */
export async function listStreams(db: Db, organizationId: string, after: Position | null, take: number): Promise<StreamRow[]> {
  let query = db.selectFrom('audit_streams').select(COLUMNS).where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

export async function findStream(db: Db, organizationId: string, id: string, forUpdate = false) {
  let query = db.selectFrom('audit_streams').select([...COLUMNS, 'secrets_sealed']).where('organization_id', '=', organizationId).where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/**
 * Changes a stream. A new config (or enabling it again) ends a pause and a failure streak and
 * makes it due now: the cursor stays where the sink last accepted, so nothing is skipped.
 */
export async function updateStream(
  db: Db,
  organizationId: string,
  id: string,
  change: { enabled?: boolean; config?: Record<string, unknown>; secretsSealed?: string; restart: boolean },
  now: Date,
): Promise<StreamRow | undefined> {
  let query = db.updateTable('audit_streams').set({ updated_at: now });
  if (change.enabled !== undefined) query = query.set({ enabled: change.enabled });
  if (change.config !== undefined) query = query.set({ config: JSON.stringify(change.config) });
  if (change.secretsSealed !== undefined) query = query.set({ secrets_sealed: change.secretsSealed });
  if (change.restart) query = query.set({ paused_at: null, failing_since: null, failures: 0, next_attempt_at: now });
  return query.where('organization_id', '=', organizationId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}

export async function deleteStream(db: Db, organizationId: string, id: string): Promise<boolean> {
  const row = await db.deleteFrom('audit_streams').where('organization_id', '=', organizationId).where('id', '=', id).returning('id').executeTakeFirst();
  return row !== undefined;
}
