import { sql, type ExpressionBuilder } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { PurgeStep } from './registry';

/** The organization's lifecycle columns, read under a row lock by deletion and restore. */
export interface LifecycleRow {
  id: string;
  name: string;
  deletion_scheduled_at: Date | null;
  purge_at: Date | null;
  purge_started_at: Date | null;
}

export async function lockLifecycle(db: Db, organizationId: string): Promise<LifecycleRow | undefined> {
  return db
    .selectFrom('organizations')
    .select(['id', 'name', 'deletion_scheduled_at', 'purge_at', 'purge_started_at'])
    .where('id', '=', organizationId)
    .forUpdate()
    .executeTakeFirst();
}

export async function markDeletionScheduled(db: Db, organizationId: string, input: { now: Date; purgeAt: Date; userId: string }): Promise<void> {
  await db
    .updateTable('organizations')
    .set({
      deletion_scheduled_at: input.now,
      purge_at: input.purgeAt,
      deletion_requested_by_user_id: input.userId,
      deletion_notices_after: null,
      deletion_notices_done_at: null,
      purge_started_at: null,
      lifecycle_lease_until: null,
      lifecycle_lease_token: null,
      updated_at: input.now,
    })
    .where('id', '=', organizationId)
    .execute();
}

export async function clearDeletion(db: Db, organizationId: string, now: Date): Promise<void> {
  await db
    .updateTable('organizations')
    .set({
      deletion_scheduled_at: null,
      purge_at: null,
      deletion_requested_by_user_id: null,
      deletion_notices_after: null,
      deletion_notices_done_at: null,
      lifecycle_lease_until: null,
      lifecycle_lease_token: null,
      updated_at: now,
    })
    .where('id', '=', organizationId)
    .execute();
}

/** An organization the lifecycle job works on: notices to send, or a purge that is due. */
export interface LifecycleJob {
  id: string;
  name: string;
  token: string;
  deletedAt: Date;
  deletedByUserId: string | null;
  purgeAt: Date;
  noticesAfter: string | null;
  noticesDone: boolean;
}

/**
 * Leases up to `batch` deleted organizations with work due: members not yet mailed, or a purge
 * whose time has come (whose start it records, so a restore is refused from then on). One short
 * statement; a lease whose holder died expires and the next claim resumes the work.
 */
export async function claimLifecycleJobs(db: Db, input: { now: Date; leaseUntil: Date; token: string; batch: number }): Promise<LifecycleJob[]> {
  const { now, leaseUntil, token, batch } = input;
  const result = await sql<{
    id: string;
    name: string;
    deletion_scheduled_at: Date;
    deletion_requested_by_user_id: string | null;
    purge_at: Date;
    deletion_notices_after: string | null;
    deletion_notices_done_at: Date | null;
  }>`UPDATE organizations o
    SET lifecycle_lease_until = ${leaseUntil}, lifecycle_lease_token = ${token},
      purge_started_at = CASE WHEN o.purge_at <= ${now} THEN coalesce(o.purge_started_at, ${now}::timestamptz) ELSE o.purge_started_at END
    WHERE o.id IN (
      SELECT d.id FROM organizations d
      WHERE d.deletion_scheduled_at IS NOT NULL
        AND (d.lifecycle_lease_until IS NULL OR d.lifecycle_lease_until < ${now})
        AND (d.deletion_notices_done_at IS NULL OR d.purge_at <= ${now})
      ORDER BY d.purge_at, d.id
      LIMIT ${batch}
      FOR UPDATE SKIP LOCKED)
    RETURNING o.id, o.name, o.deletion_scheduled_at, o.deletion_requested_by_user_id, o.purge_at, o.deletion_notices_after, o.deletion_notices_done_at`.execute(db);
  return result.rows.map((r) => ({
    id: r.id,
    name: r.name,
    token,
    deletedAt: new Date(r.deletion_scheduled_at),
    deletedByUserId: r.deletion_requested_by_user_id,
    purgeAt: new Date(r.purge_at),
    noticesAfter: r.deletion_notices_after,
    noticesDone: r.deletion_notices_done_at !== null,
  }));
}

/**
 * The organization's row while this process holds its lease on the scheduled deletion: the
 * condition of every write the deletion job makes to it (none once restored or taken over).
 */
function heldForDeletion(organizationId: string, token: string) {
  return (eb: ExpressionBuilder<DB, 'organizations'>) =>
    eb.and([eb('id', '=', organizationId), eb('lifecycle_lease_token', '=', token), eb('deletion_scheduled_at', 'is not', null)]);
}

/** Keeps the lease while work goes on; false when it was lost (restored, or taken over after expiry). */
export async function extendLease(db: Db, organizationId: string, token: string, until: Date): Promise<boolean> {
  const row = await db
    .updateTable('organizations')
    .set({ lifecycle_lease_until: until })
    .where(heldForDeletion(organizationId, token))
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function releaseLease(db: Db, organizationId: string, token: string): Promise<void> {
  await db
    .updateTable('organizations')
    .set({ lifecycle_lease_until: null, lifecycle_lease_token: null })
    .where('id', '=', organizationId)
    .where('lifecycle_lease_token', '=', token)
    .execute();
}

/** The next members to tell of the deletion, after `after` (member ids sort by creation). */
export async function membersToNotify(db: Db, organizationId: string, after: string | null, limit: number): Promise<Array<{ id: string; email: string }>> {
  let query = db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.id', 'u.email'])
    .where('m.organization_id', '=', organizationId)
    .where('m.removed_at', 'is', null)
    .orderBy('m.id')
    .limit(limit);
  if (after) query = query.where('m.id', '>', after);
  return query.execute();
}

/** Records how far the notices went (in the transaction that queued them). */
export async function advanceNotices(db: Db, organizationId: string, token: string, after: string | null, done: Date | null): Promise<boolean> {
  const row = await db
    .updateTable('organizations')
    .set({ deletion_notices_after: after, deletion_notices_done_at: done })
    .where(heldForDeletion(organizationId, token))
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * One bounded batch of a purge step, as its own statement (so its own short transaction): at most
 * `limit` rows removed or detached. Returns how many; fewer than `limit` means the step is done.
 * Table and column names come from the registry (./registry.ts), never from input.
 */
export async function purgeBatch(db: Db, step: PurgeStep, organizationId: string, limit: number): Promise<number> {
  const table = sql.table(step.table);
  let statement;
  switch (step.kind) {
    case 'delete':
      statement = sql`DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE organization_id = ${organizationId} LIMIT ${limit}))`;
      break;
    case 'delete-via':
      statement = sql`DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
        SELECT c.ctid FROM ${table} c JOIN ${sql.table(step.parent)} p ON p.id = c.${sql.ref(step.column)}
        WHERE p.organization_id = ${organizationId} LIMIT ${limit}))`;
      break;
    case 'detach':
      statement = sql`UPDATE ${table} SET ${sql.ref(step.column)} = NULL WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${sql.ref(step.column)} = ${organizationId} LIMIT ${limit}))`;
      break;
    case 'keep':
      return 0;
  }
  const result = await statement.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

export async function insertTombstone(db: Db, row: { organizationId: string; nameSha256: string; deletedAt: Date; deletedByUserId: string | null; purgedAt: Date }): Promise<void> {
  await db
    .insertInto('organization_tombstones')
    .values({ organization_id: row.organizationId, name_sha256: row.nameSha256, deleted_at: row.deletedAt, deleted_by_user_id: row.deletedByUserId, purged_at: row.purgedAt })
    .onConflict((oc) => oc.column('organization_id').doNothing())
    .execute();
}

/** The organization row itself, once nothing refers to it any more; false when the lease was lost. */
export async function deleteOrganizationRow(db: Db, organizationId: string, token: string): Promise<boolean> {
  const row = await db
    .deleteFrom('organizations')
    .where(heldForDeletion(organizationId, token))
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}
