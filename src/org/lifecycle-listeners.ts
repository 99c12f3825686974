import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';

/**
 * What other areas do when an organization is locked for deletion or restored, inside the
 * transaction that does it (docs/organization-deletion.md#deletion): webhooks pause their endpoints, a
 * future audit stream its sink. src/org calls them and never imports those areas; each area's
 * listener is installed once by createDeps (src/server/app.ts), as the audit event hook is.
 */
export interface LifecycleListener {
  /** Names the listener: installing the same name twice keeps one. */
  readonly name: string;
  /** After the deletion's own audit entry (the final event) is written. */
  deletionScheduled(trx: Transaction<DB>, organizationId: string, now: Date): Promise<void>;
  /** Before the restore's audit entry: events from the restore on are sent again. */
  restored(trx: Transaction<DB>, organizationId: string, now: Date): Promise<void>;
}

const listeners = new Map<string, LifecycleListener>();

export function addLifecycleListener(listener: LifecycleListener): void {
  listeners.set(listener.name, listener);
}

export function lifecycleListeners(): LifecycleListener[] {
  return [...listeners.values()];
}
