import { sql, type Kysely } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { StreamType } from './tables';

/** A stream leased for one batch. */
export interface ClaimedStream {
  id: string;
  organization_id: string;
  type: StreamType;
  config: Record<string, unknown>;
  secrets_sealed: string;
  cursor_seq: string;
  checkpoint_seq: string;
  failures: number;
  failing_since: Date | null;
  lease_token: string;
  /** The last position to deliver while the organization is locked for deletion; null otherwise. */
  locked_through_seq: string | null;
}

/**
 * Leases up to `batch` streams that have something to deliver (the organization's chain head, or
 * its latest checkpoint, is past the stream's cursor), are enabled, not paused, due and not
 * leased by a live holder. One statement; SKIP LOCKED lets processes claim side by side, and the
 * lease keeps one batch per stream in flight across all of them, which keeps the stream in order.
 * The chain heads are read, never locked: an audited write never waits for a stream. A stream of
 * an organization locked for deletion is due only until it has delivered the deletion's entry.
 */
export async function claimStreams(db: Kysely<DB>, o: { now: Date; leaseUntil: Date; token: string; batch: number }): Promise<ClaimedStream[]> {
  const { rows } = await sql<ClaimedStream>`
    UPDATE audit_streams s SET lease_token = ${o.token}, lease_until = ${o.leaseUntil}::timestamptz
    FROM (
      SELECT a.id FROM audit_streams a
      JOIN audit_chain_heads h ON h.organization_id = a.organization_id
      WHERE a.enabled AND a.paused_at IS NULL AND a.next_attempt_at <= ${o.now}::timestamptz
        AND (a.lease_until IS NULL OR a.lease_until <= ${o.now}::timestamptz)
        AND CASE WHEN a.locked_through_seq IS NULL THEN h.seq > a.cursor_seq OR h.checkpoint_seq > a.checkpoint_seq
                 ELSE a.cursor_seq < a.locked_through_seq END
      ORDER BY a.next_attempt_at
      LIMIT ${o.batch}::int
      FOR UPDATE OF a SKIP LOCKED
    ) due
    WHERE s.id = due.id
    RETURNING s.id, s.organization_id, s.type, s.config, s.secrets_sealed, s.cursor_seq::text AS cursor_seq,
      s.checkpoint_seq::text AS checkpoint_seq, s.failures, s.failing_since, s.lease_token, s.locked_through_seq::text AS locked_through_seq`.execute(db);
  return rows.map((r) => ({ ...r, config: typeof r.config === 'string' ? (JSON.parse(r.config) as Record<string, unknown>) : r.config }));
}

/** The sink accepted the batch: the cursor moves to its last entry and checkpoint (never back); the stream is due again at `next`. */
export async function recordAccepted(db: Db, o: { id: string; token: string; lastSeq: string; lastId: string | null; lastCheckpointSeq: string; delivered: boolean; now: Date; next: Date }) {
  await sql`
    UPDATE audit_streams SET
      cursor_seq = GREATEST(cursor_seq, ${o.lastSeq}::bigint),
      cursor_id = COALESCE(${o.lastId}::text, cursor_id),
      checkpoint_seq = GREATEST(checkpoint_seq, ${o.lastCheckpointSeq}::bigint),
      last_delivered_at = CASE WHEN ${o.delivered}::boolean THEN ${o.now}::timestamptz ELSE last_delivered_at END,
      last_error = NULL, failing_since = NULL, failures = 0,
      next_attempt_at = ${o.next}::timestamptz, lease_token = NULL, lease_until = NULL
    WHERE id = ${o.id} AND lease_token = ${o.token}`.execute(db);
}

/** The batch failed: the cursor stays, the stream is tried again at `next`. Answers its failing start. */
export async function recordFailed(db: Db, o: { id: string; token: string; error: string; next: Date; now: Date }): Promise<Date | null> {
  const { rows } = await sql<{ failing_since: Date }>`
    UPDATE audit_streams SET
      last_error = ${o.error}, failing_since = COALESCE(failing_since, ${o.now}::timestamptz), failures = failures + 1,
      next_attempt_at = ${o.next}::timestamptz, lease_token = NULL, lease_until = NULL
    WHERE id = ${o.id} AND lease_token = ${o.token}
    RETURNING failing_since`.execute(db);
  return rows[0] ? new Date(rows[0].failing_since) : null;
}

/** Pauses a stream (refused credentials, or failing too long); false when it was gone or already paused. */
export async function recordPaused(db: Db, o: { id: string; organizationId: string; token: string; error: string; now: Date }): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`
    UPDATE audit_streams SET
      paused_at = ${o.now}::timestamptz, last_error = ${o.error}, failing_since = COALESCE(failing_since, ${o.now}::timestamptz),
      failures = failures + 1, lease_token = NULL, lease_until = NULL
    WHERE id = ${o.id} AND organization_id = ${o.organizationId} AND lease_token = ${o.token} AND paused_at IS NULL
    RETURNING id`.execute(db);
  return rows.length > 0;
}

/** The organization is locked for deletion: its streams stop after `throughSeq` (the deletion's entry). */
export async function lockStreams(db: Db, organizationId: string): Promise<void> {
  await sql`
    UPDATE audit_streams SET locked_through_seq = (SELECT seq FROM audit_chain_heads WHERE organization_id = ${organizationId})
    WHERE organization_id = ${organizationId}`.execute(db);
}

/** The organization is restored: its streams go on from their cursors. */
export async function unlockStreams(db: Db, organizationId: string): Promise<void> {
  await sql`UPDATE audit_streams SET locked_through_seq = NULL WHERE organization_id = ${organizationId}`.execute(db);
}
