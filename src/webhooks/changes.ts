import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps, Membership } from '../http/types';
import { emitEvent } from '../events/outbox';

/**
 * Records a webhook change for the audit log and the events outbox, inside the change's
 * transaction. TODO(audit): becomes recordChange from src/audit once it is on main (which writes
 * the event through emitEvent itself).
 */
export async function recordWebhookChange(
  trx: Transaction<DB>,
  deps: AppDeps,
  membership: Membership,
  change: { action: string; target: { type: string; id: string }; changes: Record<string, unknown> },
): Promise<void> {
  await emitEvent(trx, { organizationId: membership.organizationId, type: change.action, target: change.target, changes: change.changes, createdAt: deps.clock.now() });
}

type Pair = { from: unknown; to: unknown };

export function createdFields(fields: Record<string, unknown>): Record<string, Pair> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, { from: null, to: v }]));
}

export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, Pair> {
  const out: Record<string, Pair> = {};
  for (const [k, v] of Object.entries(after)) if (JSON.stringify(before[k]) !== JSON.stringify(v)) out[k] = { from: before[k], to: v };
  return out;
}
