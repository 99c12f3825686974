import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import { recordChange, systemContext } from '../audit';
import { failPendingDeliveries } from './store';

/**
 * Disables an endpoint that has failed for 3 days in a row, in one transaction: `enabled: false`,
 * its pending deliveries end as failed, and the change is audited as the system (which writes the
 * event `webhook.disabled`; the endpoint itself no longer receives it). A no-op when it is
 * already disabled (another process won).
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
    await recordChange(trx, systemContext(clock, organizationId), {
      action: 'webhook.disabled',
      target: { type: 'webhook', id: endpointId },
      changes: { enabled: { from: true, to: false } },
    });
    return true;
  });
}
