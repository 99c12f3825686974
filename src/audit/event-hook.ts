import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { DB } from '../db/schema';

/** An audited change's event, as its `event_row` CTE wrote it. */
export interface AuditedEvent {
  id: string;
  organizationId: string;
  type: string;
  createdAt: Date;
  /** The subscription filters that select its type ('*', the type, each 'prefix.*' above it). */
  filters: string[];
}

/**
 * What another area adds to the statement that writes an audit entry and its event (the webhook
 * delivery queue, src/webhooks/queue.ts): the audit module calls it and never imports it.
 *
 * - `ctes(event, overflow)`: CTEs written after `event_row`, defining at least `event_queued` (a
 *   data-modifying CTE with RETURNING, which the chain head waits for) and `event_announced` (a
 *   SELECT CTE the statement reads: e.g. a NOTIFY sent at commit). With 'fail', work the one
 *   statement cannot carry must make it fail (`isOverflow` then recognises the error); with
 *   'queue-the-rest' it is left to `queueRest`.
 * - `matched`: the statement's final SELECT (constant), rows `{id, queued}` (false: left for `queueRest`).
 * - `queueRest(trx, event, rows)`: the second statement for what was left out, in the transaction;
 *   called only when a row says so.
 */
export interface EventHook {
  ctes(event: AuditedEvent, overflow: 'queue-the-rest' | 'fail'): RawBuilder<unknown>;
  matched: RawBuilder<unknown>;
  queueRest(trx: Transaction<DB>, event: AuditedEvent, rows: readonly { id: string; queued: boolean }[]): Promise<void>;
  isOverflow(err: unknown): boolean;
}

/** No subscriber: the event is written and nothing else is queued. */
const none: EventHook = {
  ctes: () => sql`event_queued AS (SELECT 1 WHERE false), event_announced AS (SELECT true AS notified WHERE false)`,
  matched: sql`SELECT NULL::text AS id, true AS queued WHERE false`,
  queueRest: async () => undefined,
  isOverflow: () => false,
};

let hook: EventHook = none;

/** Installs the one subscriber to audited events (createDeps in src/server/app.ts installs the webhook queue). */
export function setEventHook(next: EventHook): void {
  hook = next;
}

export function eventHook(): EventHook {
  return hook;
}
