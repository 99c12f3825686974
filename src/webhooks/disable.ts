import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import { emitEvent } from '../events/outbox';
import { failPendingDeliveries } from './store';

/**
 * Disables an endpoint that has failed for 3 days in a row, in one transaction: `enabled: false`,
 * its pending deliveries end as failed, and the event `webhook.disabled` is written (the endpoint
 * itself no longer receives it). A no-op when it is already disabled (another process won).
 * TODO(audit): recordChange with a system context once src/audit is on main.
 */
export async function disableEndpoint(db: Kysely<DB>, clock: Clock, organizationId: string, endpointId: string): Promise<boolean> {
  const now = clock.now();
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('webhook_endpoints')
      .set({ enabled: false, updated_at: now })
      .where('id', '=', endpointId)
      .where('organization_id', '=', organizationId)
      .where('enabled', '=', true)
      .returning('id')
      .executeTakeFirst();
    if (!row) return false;
    await failPendingDeliveries(trx, endpointId, 'the endpoint was disabled after failing for 3 days', now);
    await emitEvent(trx, {
      organizationId,
      type: 'webhook.disabled',
      target: { type: 'webhook', id: endpointId },
      changes: { enabled: { from: true, to: false } },
      createdAt: now,
    });
    return true;
  });
}
