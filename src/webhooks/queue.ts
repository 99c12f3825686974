import { sql, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { isNotNullViolation } from '../db/errors';
import { newId } from '../lib/ids';
import type { AuditedEvent, EventHook } from '../audit/event-hook';
import { insertEvent } from '../events/outbox';
import { tracing } from '../observability/tracing';

/**
 * The webhook delivery queue's one writer (docs/webhooks.md#events). An audited change's event is
 * written by the audit entry's statement; this module's CTEs, in that same statement (through the
 * audit module's event hook), queue one pending delivery per enabled endpoint whose filter
 * matches, so a change that rolls back leaves no delivery, and a committed event always has its
 * deliveries queued (the dispatcher only reads deliveries). Endpoints that are disabled at that
 * moment get nothing: events are skipped for them, not held.
 */

/** Delivery ids made per event ahead of the statement, so the usual fan-out is queued in it. */
const IDS_AHEAD = 8;

/** The channel a queued delivery is announced on at commit; dispatchers LISTEN (./wakeup.ts). */
export const DELIVERIES_CHANNEL = 'webhook_deliveries';

/**
 * `event_matched`, `event_queued`, `event_announced` (a SELECT CTE the statement must read, or the
 * NOTIFY is not sent). The matching endpoints get a pending delivery each, up to IDS_AHEAD of them
 * in the statement. Past IDS_AHEAD matches, 'queue-the-rest' leaves them out (`queueRest` queues
 * them in a second statement) and 'fail' gives them a NULL id, so the whole statement fails
 * (`isOverflow`) and writes nothing: a change written in one statement without a transaction then
 * falls back to a transaction. The NOTIFY wakes the dispatchers when the transaction commits
 * (Postgres sends notifications only on commit; polling remains the fallback).
 */
export const webhookDeliveries: EventHook = {
  ctes(event, overflow) {
    const ids = Array.from({ length: IDS_AHEAD }, () => newId('webhookDelivery'));
    return sql`event_matched AS (
      SELECT e.id, row_number() OVER (ORDER BY e.id) AS n FROM webhook_endpoints e
      WHERE e.organization_id = ${event.organizationId} AND e.enabled AND NOT e.organization_locked AND e.events && ${event.filters}::text[]
    ), event_queued AS (
      INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, status, next_attempt_at, trace_context, created_at, updated_at)
      SELECT (${ids}::text[])[m.n], ${event.organizationId}, m.id, ${event.id}, ${event.type}, 'pending', ${event.createdAt}::timestamptz, ${tracing?.current() ?? null}::text, ${event.createdAt}::timestamptz, ${event.createdAt}::timestamptz
      FROM event_matched m ${overflow === 'queue-the-rest' ? sql`WHERE m.n <= ${IDS_AHEAD}::int` : sql``}
      RETURNING 1
    ), event_announced AS (
      SELECT pg_notify(${DELIVERIES_CHANNEL}, '') AS notified WHERE EXISTS (SELECT 1 FROM event_queued)
    )`;
  },
  matched: sql`SELECT m.id, m.n <= ${IDS_AHEAD}::int AS queued FROM event_matched m`,
  async queueRest(trx, event, rows) {
    const rest = rows.filter((r) => !r.queued).map((r) => r.id);
    if (rest.length > 0) await queueDeliveries(trx, event, rest);
  },
  // The (IDS_AHEAD + 1)th matching endpoint got a NULL id.
  isOverflow: (err) => isNotNullViolation(err, 'webhook_deliveries', 'id'),
};

/** A `webhook.test` event delivered to one endpoint only, whatever its filter (POST …/test). */
export async function emitTestEvent(
  trx: Transaction<DB>,
  input: { organizationId: string; endpointId: string; createdAt: Date },
): Promise<{ eventId: string; deliveryId: string }> {
  const event = await insertEvent(trx, { organizationId: input.organizationId, type: 'webhook.test', target: { type: 'webhook', id: input.endpointId }, changes: {}, createdAt: input.createdAt });
  const [deliveryId] = await queueDeliveries(trx, event, [input.endpointId]);
  return { eventId: event.id, deliveryId: deliveryId! };
}

async function queueDeliveries(trx: Transaction<DB>, event: Omit<AuditedEvent, 'filters'>, endpointIds: string[]): Promise<string[]> {
  const ids = endpointIds.map(() => newId('webhookDelivery'));
  await trx
    .insertInto('webhook_deliveries')
    .values(
      endpointIds.map((endpointId, i) => ({
        id: ids[i]!,
        organization_id: event.organizationId,
        endpoint_id: endpointId,
        event_id: event.id,
        event_type: event.type,
        status: 'pending' as const,
        last_status_code: null,
        last_error: null,
        next_attempt_at: event.createdAt,
        lease_until: null,
        lease_token: null,
        trace_context: tracing?.current() ?? null,
        created_at: event.createdAt,
        updated_at: event.createdAt,
      })),
    )
    .execute();
  await sql`SELECT pg_notify(${DELIVERIES_CHANNEL}, '')`.execute(trx);
  return ids;
}
