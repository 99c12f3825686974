import { sql, type Kysely } from 'kysely';
import type { DB, Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

/** An organization whose chain head is due for a checkpoint, as read from its head. */
export interface DueHead {
  /** The organization (the job's id: one checkpoint per organization in flight). */
  id: string;
  seq: string;
  hash: string;
}

/**
 * Heads due for a checkpoint: `every` entries past the latest one, or entries newer than it
 * while it is older than `cutoff` (or there is none yet). Reads the heads alone (one row per
 * organization, no join), so a pass costs the same however long the logs are.
 */
export async function dueHeads(db: Kysely<DB>, options: { every: number; cutoff: Date; batch: number; skip: string[] }): Promise<DueHead[]> {
  const { rows } = await sql<DueHead>`
    SELECT organization_id AS id, seq::text AS seq, hash FROM audit_chain_heads
    WHERE seq > checkpoint_seq
      AND (seq >= checkpoint_seq + ${options.every}::bigint OR checkpoint_at IS NULL OR checkpoint_at <= ${options.cutoff}::timestamptz)
      AND organization_id <> ALL (${options.skip}::text[])
    ORDER BY organization_id
    LIMIT ${options.batch}::int
  `.execute(db);
  return rows;
}

export interface NewCheckpoint {
  id: string;
  organizationId: string;
  seq: string;
  head: string;
  note: string;
  createdAt: Date;
}

/**
 * Stores signed checkpoints and moves each head's checkpoint mark, in one statement. A checkpoint
 * another process already stored at the same position is kept (Ed25519 signatures are
 * deterministic: it is the same note). An organization deleted meanwhile is skipped.
 */
export async function insertCheckpoints(db: Kysely<DB>, checkpoints: NewCheckpoint[]): Promise<void> {
  if (checkpoints.length === 0) return;
  const payload = JSON.stringify(
    checkpoints.map((c) => ({ id: c.id, organization_id: c.organizationId, seq: c.seq, head: c.head, note: c.note, created_at: c.createdAt.toISOString() })),
  );
  await sql`
    WITH v AS (
      SELECT v.* FROM jsonb_to_recordset(${payload}::jsonb) AS v(id text, organization_id text, seq bigint, head text, note text, created_at timestamptz)
      WHERE EXISTS (SELECT 1 FROM audit_chain_heads h WHERE h.organization_id = v.organization_id)
    ), stored AS (
      INSERT INTO audit_checkpoints (id, organization_id, seq, head, note, created_at)
      SELECT id, organization_id, seq, head, note, created_at FROM v
      ON CONFLICT (organization_id, seq) DO NOTHING
    ), marked AS (
      UPDATE audit_chain_heads h SET checkpoint_seq = v.seq, checkpoint_at = v.created_at
      FROM v WHERE h.organization_id = v.organization_id AND h.checkpoint_seq < v.seq
    )
    SELECT 1
  `.execute(db);
}

export interface CheckpointRow {
  id: string;
  seq: string;
  head: string;
  note: string;
  created_at: Date;
}

const CHECKPOINT_COLUMNS = ['id', 'seq', 'head', 'note', 'created_at'] as const;

/** Newest first (keyset on created_at, id). */
export async function listCheckpoints(db: Db, organizationId: string, after: Position | null, take: number): Promise<CheckpointRow[]> {
  let query = db.selectFrom('audit_checkpoints').select(CHECKPOINT_COLUMNS).where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

/** The stored checkpoint at a position (kept after retention pruned its entry). */
export async function checkpointAt(db: Db, organizationId: string, seq: bigint): Promise<CheckpointRow | undefined> {
  return db.selectFrom('audit_checkpoints').select(CHECKPOINT_COLUMNS).where('organization_id', '=', organizationId).where('seq', '=', seq.toString()).executeTakeFirst();
}

/** Checkpoints past `afterSeq` up to `uptoSeq`, oldest first (what a stream delivers next). */
export async function checkpointsBetween(db: Db, organizationId: string, afterSeq: string, uptoSeq: string, take: number): Promise<CheckpointRow[]> {
  return db
    .selectFrom('audit_checkpoints')
    .select(CHECKPOINT_COLUMNS)
    .where('organization_id', '=', organizationId)
    .where('seq', '>', afterSeq)
    .where('seq', '<=', uptoSeq)
    .orderBy('seq')
    .limit(take)
    .execute();
}
