import type { LifecycleListener } from '../org/lifecycle-listeners';

/**
 * An organization locked for deletion gets no webhook after its `organization.deletion_scheduled`
 * event (queued by that change's audit entry, before this runs); a restore resumes its endpoints
 * from the restore on (docs/organization-deletion.md#deletion). The lock is a column of its own,
 * so an endpoint its owner disabled stays disabled after a restore. Endpoints per organization
 * are few (plan limits), so one statement each way.
 */
export const webhookLifecycle: LifecycleListener = {
  name: 'webhooks',
  async deletionScheduled(trx, organizationId) {
    await trx.updateTable('webhook_endpoints').set({ organization_locked: true }).where('organization_id', '=', organizationId).execute();
  },
  async restored(trx, organizationId) {
    await trx.updateTable('webhook_endpoints').set({ organization_locked: false }).where('organization_id', '=', organizationId).execute();
  },
};
