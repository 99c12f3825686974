import { sql, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { newId } from '../lib/ids';

/**
 * The events outbox (audit-and-events.md §2). `emitEvent` runs inside the transaction of the
 * change the event describes: the event row and one pending delivery per enabled webhook endpoint
 * whose filter matches are written there, so a change that rolls back leaves no event, and a
 * committed event always has its deliveries queued (the dispatcher only reads deliveries).
 * Endpoints that are disabled at that moment get nothing: events are skipped for them, not held.
 */
export interface EventInput {
  organizationId: string;
  /** The audit action, '<resource>.<verb>'. */
  type: string;
  target: { type: string; id: string | null } | null;
  /** `{field: {from, to}}`, already free of secrets (the audit function redacts them). */
  changes: Record<string, unknown>;
  createdAt: Date;
}

/** The filters that select `type`: '*', the type itself and each 'prefix.*' above it. */
export function matchingFilters(type: string): string[] {
  const parts = type.split('.');
  const filters = ['*', type];
  for (let i = 1; i < parts.length; i++) filters.push(`${parts.slice(0, i).join('.')}.*`);
  return filters;
}

/** Whether one endpoint's filters select `type` (the SQL below is the same rule). */
export function filtersMatch(filters: readonly string[], type: string): boolean {
  const wanted = new Set(matchingFilters(type));
  return filters.some((f) => wanted.has(f));
}

function eventData(input: EventInput) {
  return { target: input.target ? { type: input.target.type, id: input.target.id } : null, changes: input.changes };
}

/**
 * Writes the event and queues its deliveries. One statement when no endpoint listens (the insert
 * returns the matching endpoints), a second one for the deliveries otherwise.
 */
export async function emitEvent(trx: Transaction<DB>, input: EventInput): Promise<string> {
  const id = newId('event');
  const { rows } = await sql<{ id: string }>`
    /* prepared:events_emit */
    WITH inserted AS (
      INSERT INTO events (id, organization_id, type, data, created_at)
      VALUES (${id}, ${input.organizationId}, ${input.type}, ${JSON.stringify(eventData(input))}::jsonb, ${input.createdAt}::timestamptz)
    )
    SELECT id FROM webhook_endpoints
    WHERE organization_id = ${input.organizationId} AND enabled AND events && ${matchingFilters(input.type)}::text[]
  `.execute(trx);
  if (rows.length > 0) await queueDeliveries(trx, { eventId: id, organizationId: input.organizationId, type: input.type, createdAt: input.createdAt }, rows.map((r) => r.id));
  return id;
}

/** A `webhook.test` event delivered to one endpoint only, whatever its filter (POST …/test). */
export async function emitTestEvent(
  trx: Transaction<DB>,
  input: { organizationId: string; endpointId: string; createdAt: Date },
): Promise<{ eventId: string; deliveryId: string }> {
  const id = newId('event');
  const data = { target: { type: 'webhook', id: input.endpointId }, changes: {} };
  await trx
    .insertInto('events')
    .values({ id, organization_id: input.organizationId, type: 'webhook.test', data: JSON.stringify(data), created_at: input.createdAt })
    .execute();
  const [deliveryId] = await queueDeliveries(trx, { eventId: id, organizationId: input.organizationId, type: 'webhook.test', createdAt: input.createdAt }, [input.endpointId]);
  return { eventId: id, deliveryId: deliveryId! };
}

async function queueDeliveries(
  trx: Transaction<DB>,
  event: { eventId: string; organizationId: string; type: string; createdAt: Date },
  endpointIds: string[],
): Promise<string[]> {
  const ids = endpointIds.map(() => newId('webhookDelivery'));
  await trx
    .insertInto('webhook_deliveries')
    .values(
      endpointIds.map((endpointId, i) => ({
        id: ids[i]!,
        organization_id: event.organizationId,
        endpoint_id: endpointId,
        event_id: event.eventId,
        event_type: event.type,
        status: 'pending' as const,
        last_status_code: null,
        last_error: null,
        next_attempt_at: event.createdAt,
        lease_until: null,
        lease_token: null,
        created_at: event.createdAt,
        updated_at: event.createdAt,
      })),
    )
    .execute();
  return ids;
}

/** A valid filter: `*`, `word(.word)+` (an exact type) or `word(.word)*.*` (a prefix). */
const FILTER = /^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+)$/;

/** The index of the first filter that is not valid, or -1. */
export function invalidFilterIndex(filters: readonly string[]): number {
  return filters.findIndex((f) => !FILTER.test(f));
}
