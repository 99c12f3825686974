import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import { visibleTo } from '../access/resource-roles';
import { CONNECTOR_INSTANCE } from '../grants/resources';

export type ConnectorStatus = 'active' | 'disabled';

export interface ConnectorInstanceRow {
  id: string;
  organization_id: string;
  name: string;
  connector_type: string;
  remote_id: string | null;
  config: Record<string, unknown>;
  status: ConnectorStatus;
  created_by_member_id: string | null;
  created_at: Date;
  updated_at: Date;
}

// Unqualified, so the same list serves SELECT (aliased `c`), INSERT and UPDATE ... RETURNING.
const COLUMNS = [
  'id',
  'organization_id',
  'name',
  'connector_type',
  'remote_id',
  sql<Record<string, unknown>>`config`.as('config'),
  sql<ConnectorStatus>`status`.as('status'),
  'created_by_member_id',
  'created_at',
  'updated_at',
] as const;

export async function insertConnectorInstance(
  db: Db,
  c: { id: string; organizationId: string; name: string; connectorType: string; remoteId: string | null; config: Record<string, unknown>; createdByMemberId: string; now: Date },
): Promise<ConnectorInstanceRow> {
  return db
    .insertInto('connector_instances')
    .values({
      id: c.id,
      organization_id: c.organizationId,
      name: c.name,
      connector_type: c.connectorType,
      remote_id: c.remoteId,
      config: JSON.stringify(c.config),
      status: 'active',
      created_by_member_id: c.createdByMemberId,
      created_at: c.now,
      updated_at: c.now,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function findConnectorInstance(db: Db, organizationId: string, id: string): Promise<ConnectorInstanceRow | undefined> {
  return db.selectFrom('connector_instances as c').select(COLUMNS).where('c.organization_id', '=', organizationId).where('c.id', '=', id).executeTakeFirst();
}

export async function listConnectorInstances(db: Db, organizationId: string, visibleToMemberId: string | null, after: Position | null, take: number): Promise<ConnectorInstanceRow[]> {
  let query = db.selectFrom('connector_instances as c').select(COLUMNS).where('c.organization_id', '=', organizationId);
  if (visibleToMemberId) query = query.where(visibleTo(CONNECTOR_INSTANCE.ref, 'c', visibleToMemberId));
  if (after) query = query.where(before('c.created_at', 'c.id', after));
  return query.orderBy('c.created_at', 'desc').orderBy('c.id', 'desc').limit(take).execute();
}

export async function updateConnectorInstance(
  db: Db,
  organizationId: string,
  id: string,
  patch: { name?: string; remoteId?: string | null; config?: Record<string, unknown>; status?: ConnectorStatus },
  now: Date,
): Promise<ConnectorInstanceRow | undefined> {
  return db
    .updateTable('connector_instances')
    .set({
      name: patch.name,
      remote_id: patch.remoteId,
      config: patch.config === undefined ? undefined : JSON.stringify(patch.config),
      status: patch.status,
      updated_at: now,
    })
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .returning(COLUMNS)
    .executeTakeFirst();
}

/** Deletes the instance; its grants go with it (ON DELETE CASCADE). */
export async function deleteConnectorInstance(db: Db, organizationId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('connector_instances').where('id', '=', id).where('organization_id', '=', organizationId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
