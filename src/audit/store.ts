import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import { ENTRY_COLUMNS, type EntryRow } from './entries';

export interface AuditFilter {
  /** Exact action, or a prefix when it ends in `.*`. */
  action?: string;
  actorMemberId?: string;
  targetId?: string;
  from?: Date;
  to?: Date;
}

function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A newest-first page (keyset on created_at, id; each filter has an index led by the organization). */
export async function listEntries(db: Db, organizationId: string, filter: AuditFilter, after: Position | null, take: number): Promise<EntryRow[]> {
  let query = db.selectFrom('audit_logs').select(ENTRY_COLUMNS).where('organization_id', '=', organizationId);
  if (filter.action?.endsWith('.*')) query = query.where(sql<boolean>`action LIKE ${`${escapeLike(filter.action.slice(0, -1))}%`}`);
  else if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.actorMemberId) query = query.where('actor_member_id', '=', filter.actorMemberId);
  if (filter.targetId) query = query.where('target_id', '=', filter.targetId);
  if (filter.from) query = query.where('created_at', '>=', filter.from);
  if (filter.to) query = query.where('created_at', '<', filter.to);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

export type ChainRow = EntryRow & { seq: string; prev_hash: string; hash: string };

/** The next batch in chain order (oldest first) after `afterSeq`, optionally within a time range. */
export async function chainBatch(db: Db, organizationId: string, afterSeq: string, take: number, range: { from?: Date; to?: Date } = {}): Promise<ChainRow[]> {
  let query = db
    .selectFrom('audit_logs')
    .select([...ENTRY_COLUMNS, 'seq', 'prev_hash', 'hash'])
    .where('organization_id', '=', organizationId)
    .where('seq', '>', afterSeq);
  if (range.from) query = query.where('created_at', '>=', range.from);
  if (range.to) query = query.where('created_at', '<', range.to);
  return query.orderBy('seq').limit(take).execute();
}

export async function chainHead(db: Db, organizationId: string) {
  return db.selectFrom('audit_chain_heads').select(['seq', 'hash', 'last_at']).where('organization_id', '=', organizationId).executeTakeFirst();
}

/** Deletes up to `batch` entries created before `cutoff` (any organization); how many went. */
export async function pruneBatch(db: Db, cutoff: Date, batch: number): Promise<number> {
  const result = await sql`
    DELETE FROM audit_logs WHERE id IN (SELECT id FROM audit_logs WHERE created_at < ${cutoff} LIMIT ${batch})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
