import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { newId } from '../lib/ids';

/**
 * The events outbox (docs/webhooks.md#events). An event is written by the statement of the
 * change's audit entry, inside the change's transaction (or its one statement), so a change that
 * rolls back leaves no event. What is queued for an event (webhook deliveries) is written in the
 * same statement by the audit module's event hook (src/audit/event-hook.ts; src/webhooks/queue.ts).
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

/** Whether one endpoint's filters select `type` (the delivery queue's SQL is the same rule). */
export function filtersMatch(filters: readonly string[], type: string): boolean {
  const wanted = new Set(matchingFilters(type));
  return filters.some((f) => wanted.has(f));
}

function eventData(input: EventInput) {
  return { target: input.target ? { type: input.target.type, id: input.target.id } : null, changes: input.changes };
}

/**
 * The event as the CTE `event_row` of the audit entry's statement, and the subscription filters
 * that select it (`matchingFilters`), so what queues deliveries for it need not ask again.
 */
export function eventRowCte(input: EventInput): { id: string; cte: RawBuilder<unknown>; filters: string[] } {
  const id = newId('event');
  const cte = sql`event_row AS (
      INSERT INTO events (id, organization_id, type, data, created_at)
      VALUES (${id}, ${input.organizationId}, ${input.type}, ${JSON.stringify(eventData(input))}::jsonb, ${input.createdAt}::timestamptz)
    )`;
  return { id, cte, filters: matchingFilters(input.type) };
}

/** An event written on its own (a webhook test event, which has no audit entry). */
export async function insertEvent(trx: Transaction<DB>, input: EventInput): Promise<{ id: string; organizationId: string; type: string; createdAt: Date }> {
  const id = newId('event');
  await trx
    .insertInto('events')
    .values({ id, organization_id: input.organizationId, type: input.type, data: JSON.stringify(eventData(input)), created_at: input.createdAt })
    .execute();
  return { id, organizationId: input.organizationId, type: input.type, createdAt: input.createdAt };
}

/** A valid filter: `*`, `word(.word)+` (an exact type) or `word(.word)*.*` (a prefix). */
const FILTER = /^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+)$/;

/** The index of the first filter that is not valid, or -1. */
export function invalidFilterIndex(filters: readonly string[]): number {
  return filters.findIndex((f) => !FILTER.test(f));
}
