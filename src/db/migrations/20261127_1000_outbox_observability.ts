import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Operations (docs/running-the-service.md#metrics): the outbox backlog gauges and /ready's warnings read the
 * pending rows' count and oldest `created_at` from partial indexes of pending rows, and the latest
 * mail attempt from an index on `last_attempt_at`, never the whole table. A webhook delivery keeps
 * the W3C trace context of the request that queued it (mail_messages has its column already), so
 * its delivery span is linked to that request.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE webhook_deliveries ADD COLUMN trace_context text;
    CREATE INDEX webhook_deliveries_pending_created_idx ON webhook_deliveries (created_at) WHERE status = 'pending';
    CREATE INDEX mail_messages_pending_created_idx ON mail_messages (created_at) WHERE status = 'pending';
    CREATE INDEX mail_messages_last_attempt_idx ON mail_messages (last_attempt_at DESC) WHERE last_attempt_at IS NOT NULL;
    `,
  );
}
