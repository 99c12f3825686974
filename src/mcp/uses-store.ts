import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

/** mcp_connection_uses: what the credential broker lent, one row per token (src/mcp/broker.ts writes it). */
export interface UseRow {
  id: string;
  worker_id: string;
  worker_name: string;
  client_id: string;
  used_at: Date;
}

/**
 * Records one lent token. The worker's name is read in the same statement (the worker is the
 * principal's actor, checked running on this request), so a later rename or deletion leaves the
 * row as it was.
 */
export async function insertUse(db: Db, use: { id: string; organizationId: string; connectionId: string; memberId: string; workerId: string; clientId: string; at: Date }): Promise<void> {
  await db
    .insertInto('mcp_connection_uses')
    .columns(['id', 'organization_id', 'connection_id', 'member_id', 'worker_id', 'worker_name', 'client_id', 'used_at'])
    .expression(
      db
        .selectFrom('workers as w')
        .select([
          sql.val(use.id).as('id'),
          sql.val(use.organizationId).as('organization_id'),
          sql.val(use.connectionId).as('connection_id'),
          sql.val(use.memberId).as('member_id'),
          'w.id as worker_id',
          'w.name as worker_name',
          sql.val(use.clientId).as('client_id'),
          sql.val(use.at).as('used_at'),
        ])
        .where('w.organization_id', '=', use.organizationId)
        .where('w.id', '=', use.workerId),
    )
    .execute();
}

/** One member's uses of one connection, newest first (the index mcp_connection_uses_member_page_idx serves it at any depth). */
export async function listUses(db: Db, scope: { organizationId: string; memberId: string; connectionId: string }, after: Position | null, take: number): Promise<(UseRow & Position)[]> {
  let query = db
    .selectFrom('mcp_connection_uses as u')
    .select(['u.id', 'u.worker_id', 'u.worker_name', 'u.client_id', 'u.used_at'])
    .where('u.organization_id', '=', scope.organizationId)
    .where('u.member_id', '=', scope.memberId)
    .where('u.connection_id', '=', scope.connectionId);
  if (after) query = query.where(before('u.used_at', 'u.id', after));
  const rows = await query.orderBy('u.used_at', 'desc').orderBy('u.id', 'desc').limit(take).execute();
  return rows.map((row) => ({ ...row, createdAt: row.used_at }));
}
