import type { LifecycleListener } from '../org/lifecycle-listeners';
import { lockStreams, unlockStreams } from './dispatch-store';

/**
 * An organization locked for deletion (docs/organization-deletion.md#deletion): its audit streams deliver
 * up to and including the deletion's own entry (written before this runs, in the same
 * transaction), then stop; a restore lets them go on from their cursors, so the customer's SIEM
 * still receives every entry once or more, in order. `enabled` and `paused_at` stay the owner's.
 */
export const auditStreamLifecycle: LifecycleListener = {
  name: 'audit-streams',
  async deletionScheduled(trx, organizationId) {
    await lockStreams(trx, organizationId);
  },
  async restored(trx, organizationId) {
    await unlockStreams(trx, organizationId);
  },
};
