import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import type { EventData } from '../webhooks/tables';

export interface EventRow {
  id: string;
  organization_id: string;
  type: string;
  data: EventData;
  created_at: Date;
}

/** Events are kept this long (pruned by the dispatcher's maintenance, hidden from lists at once). */
export const EVENT_RETENTION_MS = 30 * 24 * 3_600_000;

/** Newest first; `type` is exact or 'prefix.*'. Only events newer than `since`. */
export async function listEvents(db: Db, organizationId: string, filter: { type?: string; since: Date }, after: Position | null, take: number): Promise<EventRow[]> {
  let query = db
    .selectFrom('events')
    .select(['id', 'organization_id', 'type', 'data', 'created_at'])
    .where('organization_id', '=', organizationId)
    .where('created_at', '>', filter.since);
  if (filter.type === '*') {
    // every type
  } else if (filter.type?.endsWith('.*')) {
    // 'member.*' → LIKE 'member.%' ('_' escaped: types may contain it).
    query = query.where('type', 'like', `${filter.type.slice(0, -1).replace(/[\\%_]/g, '\\$&')}%`);
  } else if (filter.type) {
    query = query.where('type', '=', filter.type);
  }
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute() as Promise<EventRow[]>;
}

/** Deletes up to `batch` events older than `cutoff` (their deliveries go with them); returns how many. */
export async function pruneEvents(db: Db, cutoff: Date, batch = 5000): Promise<number> {
  const result = await db
    .deleteFrom('events')
    .where('id', 'in', db.selectFrom('events').select('id').where('created_at', '<', cutoff).limit(batch))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
