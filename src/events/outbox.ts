import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { isNotNullViolation } from '../db/errors';
import { newId } from '../lib/ids';

/**
 * The events outbox (audit-and-events.md §2). An event is written by the statement of the
 * change's audit entry, inside the change's transaction (or its one statement): the event row and
 * one pending delivery per enabled webhook endpoint whose filter matches are written there, so a
 * change that rolls back leaves no event, and a committed event always has its deliveries queued
 * (the dispatcher only reads deliveries).
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

/** Delivery ids made per event ahead of the statement, so the usual fan-out is queued in it. */
const IDS_AHEAD = 8;

/** The channel a queued delivery is announced on at commit; dispatchers LISTEN (src/webhooks/wakeup.ts). */
export const DELIVERIES_CHANNEL = 'webhook_deliveries';

/**
 * The event as CTEs of the caller's statement inside a transaction (recordChange writes it with the
 * audit entry, one round trip): `event_row`, `event_matched`, `event_queued`, `event_announced` (a
 * SELECT CTE the statement must read, or the NOTIFY is not sent). The matching endpoints get a
 * pending delivery each, up to IDS_AHEAD of them in the statement; the statement ends with
 * `matched`, and `queueRest` then queues the deliveries of any endpoints past IDS_AHEAD in a
 * second statement. The NOTIFY wakes the dispatchers when the transaction commits (Postgres sends
 * notifications only on commit, so nothing is announced for a change that rolls back; polling
 * remains the fallback).
 */
export function queuedEventCtes(input: EventInput) {
  const { id, ctes } = eventStatement(input, 'queue-the-rest');
  return {
    ctes,
    matched: sql`SELECT m.id, m.n <= ${IDS_AHEAD}::int AS queued FROM event_matched m`,
    async queueRest(trx: Transaction<DB>, matched: readonly { id: string; queued: boolean }[]): Promise<void> {
      const rest = matched.filter((r) => !r.queued).map((r) => r.id);
      if (rest.length > 0) await queueDeliveries(trx, { eventId: id, organizationId: input.organizationId, type: input.type, createdAt: input.createdAt }, rest);
    },
  };
}

/**
 * The same event as CTEs of a caller's own statement (see `changeCtes` in src/audit/record.ts), for
 * a change written in one statement without a transaction: `event_row`, `event_matched`,
 * `event_queued` and `event_announced` (a SELECT CTE: the statement must read it, or the NOTIFY is
 * not sent). Without a transaction there is no second statement for the deliveries beyond the ids
 * sent, so none is left out: the (IDS_AHEAD + 1)th matching endpoint gets a NULL id and the whole
 * statement fails on it (`isDeliveryOverflow`), writing nothing; the caller then writes the change
 * in a transaction with recordChange (`queuedEventCtes`).
 */
export function eventCtes(input: EventInput): RawBuilder<unknown> {
  return eventStatement(input, 'fail').ctes;
}

/**
 * The one writing of an event and its deliveries (both callers above): which endpoints match and
 * how a delivery is queued. Past IDS_AHEAD matches, 'queue-the-rest' leaves them out (the caller
 * queues them in a second statement) and 'fail' gives them a NULL id.
 */
function eventStatement(input: EventInput, overflow: 'queue-the-rest' | 'fail') {
  const id = newId('event');
  const ids = Array.from({ length: IDS_AHEAD }, () => newId('webhookDelivery'));
  const ctes = sql`event_row AS (
      INSERT INTO events (id, organization_id, type, data, created_at)
      VALUES (${id}, ${input.organizationId}, ${input.type}, ${JSON.stringify(eventData(input))}::jsonb, ${input.createdAt}::timestamptz)
    ), event_matched AS (
      SELECT e.id, row_number() OVER (ORDER BY e.id) AS n FROM webhook_endpoints e
      WHERE e.organization_id = ${input.organizationId} AND e.enabled AND e.events && ${matchingFilters(input.type)}::text[]
    ), event_queued AS (
      INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at, updated_at)
      SELECT (${ids}::text[])[m.n], ${input.organizationId}, m.id, ${id}, ${input.type}, 'pending', ${input.createdAt}::timestamptz, ${input.createdAt}::timestamptz, ${input.createdAt}::timestamptz
      FROM event_matched m ${overflow === 'queue-the-rest' ? sql`WHERE m.n <= ${IDS_AHEAD}::int` : sql``}
      RETURNING 1
    ), event_announced AS (
      SELECT pg_notify(${DELIVERIES_CHANNEL}, '') AS notified WHERE EXISTS (SELECT 1 FROM event_queued)
    )`;
  return { id, ctes };
}

/** True when a statement built with `eventCtes` failed because more endpoints matched than it had delivery ids for. */
export function isDeliveryOverflow(err: unknown): boolean {
  return isNotNullViolation(err, 'webhook_deliveries', 'id');
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
  await sql`SELECT pg_notify(${DELIVERIES_CHANNEL}, '')`.execute(trx);
  return ids;
}

/** A valid filter: `*`, `word(.word)+` (an exact type) or `word(.word)*.*` (a prefix). */
const FILTER = /^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+)$/;

/** The index of the first filter that is not valid, or -1. */
export function invalidFilterIndex(filters: readonly string[]): number {
  return filters.findIndex((f) => !FILTER.test(f));
}
