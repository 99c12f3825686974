import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { ENTRY_COLUMNS, toEntry } from './entries';
import type { AuditEntry } from './record';
import { checkpointsBetween } from './checkpoint-store';
import { chainHead } from './store';

/**
 * What audit streams (src/audit-streams) read from the log, in chain order: entries after a
 * position, each followed by the checkpoint signed at it. The audit area owns these tables; a
 * stream only reads them, so delivering never takes a lock an audited write waits for.
 */
export interface CheckpointRecord {
  kind: 'checkpoint';
  id: string;
  /** The signed note (C2SP signed note with the tlog-checkpoint text). */
  note: string;
  /** The entry count it signs (the chain position of its head entry). */
  count: number;
  createdAt: string;
}

export type StreamRecord = AuditEntry | CheckpointRecord;

export interface StreamBatch {
  records: StreamRecord[];
  /** Position and id of the batch's last entry (unchanged from `afterSeq` when it has none). */
  lastSeq: string;
  lastId: string | null;
  /** Position of the batch's last checkpoint (unchanged from `afterCheckpointSeq` when it has none). */
  lastCheckpointSeq: string;
}

/** An entry with its chain position. */
export interface PositionedEntry {
  seq: string;
  entry: AuditEntry;
}

/** Reads up to `take` entries after `afterSeq`, in chain order (a stream may keep what it read: src/audit-streams/entry-window.ts). */
export type EntryReader = (afterSeq: string, take: number) => Promise<PositionedEntry[]>;

/**
 * Up to `take` entries after `afterSeq` in chain order: one statement on the (organization, seq)
 * key, without the hashes (a stream's records do not carry them). The chain head's row lock
 * orders commits as it orders positions, so what this reads has no gaps a later commit fills.
 */
export async function entriesAfter(db: Db, organizationId: string, afterSeq: string, take: number): Promise<PositionedEntry[]> {
  const rows = await db
    .selectFrom('audit_logs')
    .select([...ENTRY_COLUMNS, 'seq'])
    .where('organization_id', '=', organizationId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(take)
    .execute();
  return rows.map((row) => ({ seq: String(row.seq), entry: toEntry(row) }));
}

/**
 * Up to `take` entries after `afterSeq`, with the checkpoints past `afterCheckpointSeq` signed at
 * or before the batch's last entry, each placed right after its head entry (a checkpoint signed
 * at a position the stream has already passed comes first). Nothing past `throughSeq` when given.
 */
export async function streamBatch(
  db: Db,
  organizationId: string,
  afterSeq: string,
  afterCheckpointSeq: string,
  take: number,
  throughSeq: string | null = null,
  read: EntryReader = (after, n) => entriesAfter(db, organizationId, after, n),
): Promise<StreamBatch> {
  const entries = await read(afterSeq, take);
  // A locked organization's stream ends at its deletion entry (`throughSeq`).
  const rows = throughSeq === null ? entries : entries.filter((row) => BigInt(row.seq) <= BigInt(throughSeq));
  const lastSeq = rows.length > 0 ? rows[rows.length - 1]!.seq : afterSeq;
  const checkpoints = BigInt(lastSeq) > BigInt(afterCheckpointSeq) ? await checkpointsBetween(db, organizationId, afterCheckpointSeq, lastSeq, take) : [];
  const records: StreamRecord[] = [];
  let c = 0;
  const checkpointRecord = (i: number): CheckpointRecord => {
    const row = checkpoints[i]!;
    return { kind: 'checkpoint', id: row.id, note: row.note, count: Number(row.seq), createdAt: new Date(row.created_at).toISOString() };
  };
  for (const row of rows) {
    while (c < checkpoints.length && BigInt(checkpoints[c]!.seq) < BigInt(row.seq)) records.push(checkpointRecord(c++));
    records.push(row.entry);
    while (c < checkpoints.length && checkpoints[c]!.seq === row.seq) records.push(checkpointRecord(c++));
  }
  while (c < checkpoints.length) records.push(checkpointRecord(c++));
  return {
    records,
    lastSeq,
    lastId: rows.length > 0 ? rows[rows.length - 1]!.entry.id : null,
    lastCheckpointSeq: checkpoints.length > 0 ? checkpoints[checkpoints.length - 1]!.seq : afterCheckpointSeq,
  };
}

/** The organization's chain position now (0 before its first entry). */
export async function headPosition(db: Db, organizationId: string): Promise<string> {
  return (await chainHead(db, organizationId))?.seq ?? '0';
}

/**
 * The position just before the first entry created at or after `from` (a stream backfilled from
 * there starts after it); the head when there is none.
 */
export async function positionBefore(db: Db, organizationId: string, from: Date): Promise<string> {
  const { rows } = await sql<{ seq: string | null }>`
    SELECT (min(seq) - 1)::text AS seq FROM audit_logs WHERE organization_id = ${organizationId} AND created_at >= ${from}::timestamptz`.execute(db);
  return rows[0]?.seq ?? (await headPosition(db, organizationId));
}
