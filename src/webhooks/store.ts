import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

export interface EndpointRow {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Never the sealed secrets: only signing (dispatch-store.ts) reads them. */
const ENDPOINT_COLUMNS = ['id', 'url', 'events', 'description', 'enabled', 'created_at', 'updated_at'] as const;

export async function insertEndpoint(
  db: Db,
  e: { id: string; organizationId: string; url: string; events: string[]; description: string | null; enabled: boolean; secretSealed: string; now: Date },
): Promise<EndpointRow> {
  return db
    .insertInto('webhook_endpoints')
    .values({
      id: e.id,
      organization_id: e.organizationId,
      url: e.url,
      events: e.events,
      description: e.description,
      enabled: e.enabled,
      secret_sealed: e.secretSealed,
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: e.now,
      updated_at: e.now,
    })
    .returning(ENDPOINT_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function listEndpoints(db: Db, organizationId: string, after: Position | null, take: number): Promise<EndpointRow[]> {
  let query = db.selectFrom('webhook_endpoints').select(ENDPOINT_COLUMNS).where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

/** `forUpdate` locks the row for the rest of the transaction (updates compare before and after). */
export async function findEndpoint(db: Db, organizationId: string, id: string, forUpdate = false): Promise<EndpointRow | undefined> {
  let query = db.selectFrom('webhook_endpoints').select(ENDPOINT_COLUMNS).where('organization_id', '=', organizationId).where('id', '=', id);
  // NO KEY UPDATE: enough to serialize changes to the endpoint, and it does not block the KEY SHARE
  // locks other transactions' foreign keys take on the row.
  if (forUpdate) query = query.forNoKeyUpdate();
  return query.executeTakeFirst();
}

export async function updateEndpoint(
  db: Db,
  organizationId: string,
  id: string,
  patch: { url?: string; events?: string[]; description?: string | null; enabled?: boolean; clearFailing?: boolean },
  now: Date,
): Promise<EndpointRow | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({
      ...(patch.url !== undefined ? { url: patch.url } : {}),
      ...(patch.events !== undefined ? { events: patch.events } : {}),
      ...(patch.description !== undefined ? { description: patch.description } : {}),
      ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
      ...(patch.clearFailing ? { failing_since: null } : {}),
      updated_at: now,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returning(ENDPOINT_COLUMNS)
    .executeTakeFirst();
}

/** The endpoint and its deliveries (no foreign key cascades them: see the migration). */
export async function deleteEndpoint(db: Db, organizationId: string, id: string): Promise<EndpointRow | undefined> {
  const row = await db.deleteFrom('webhook_endpoints').where('organization_id', '=', organizationId).where('id', '=', id).returning(ENDPOINT_COLUMNS).executeTakeFirst();
  if (row) await db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
  return row;
}

/** The new secret signs from now on; the current one keeps signing until `previousUntil`. */
export async function rotateSecret(db: Db, organizationId: string, id: string, secretSealed: string, previousUntil: Date, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('webhook_endpoints')
    .set({ previous_secret_sealed: sql<string>`secret_sealed`, previous_secret_expires_at: previousUntil, secret_sealed: secretSealed, updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Pending deliveries of a disabled endpoint are not held: they end as failed. */
export async function failPendingDeliveries(db: Db, endpointId: string, reason: string, now: Date): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: reason, next_attempt_at: null, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .execute();
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  created_at: Date;
}

const DELIVERY_COLUMNS = ['id', 'event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'last_error', 'next_attempt_at', 'created_at'] as const;

export async function listDeliveries(db: Db, organizationId: string, endpointId: string, after: Position | null, take: number): Promise<DeliveryRow[]> {
  let query = db
    .selectFrom('webhook_deliveries')
    .select(DELIVERY_COLUMNS)
    .where('endpoint_id', '=', endpointId)
    .where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

/**
 * Queues the delivery again for `now`. While an attempt is in flight (a live lease) the request is
 * remembered instead, and the attempt's outcome leaves it pending (dispatch-store.ts), so the
 * delivery is never in flight twice.
 */
export async function requeueDelivery(db: Db, organizationId: string, endpointId: string, id: string, now: Date): Promise<DeliveryRow | undefined> {
  return db
    .updateTable('webhook_deliveries')
    .set({
      status: 'pending',
      next_attempt_at: now,
      retry_requested: sql<boolean>`(lease_until IS NOT NULL AND lease_until > ${now})`,
      updated_at: now,
    })
    .where('organization_id', '=', organizationId)
    .where('endpoint_id', '=', endpointId)
    .where('id', '=', id)
    .returning(DELIVERY_COLUMNS)
    .executeTakeFirst();
}
