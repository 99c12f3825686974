import { positioned } from '../lib/pagination';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import type { PageRequest } from '../lib/pagination';
import * as store from './store';
import { invalidFilterIndex } from './outbox';
import { Invalid } from '../lib/errors';

export type ApiEvent = components['schemas']['Event'];

export function toEvent(row: store.EventRow): ApiEvent {
  return { id: row.id, type: row.type, organizationId: row.organization_id, createdAt: row.created_at.toISOString(), data: row.data };
}

export async function listEvents(deps: AppDeps, membership: Membership, query: PageRequest & { type?: string }) {
  if (query.type !== undefined && invalidFilterIndex([query.type]) >= 0) throw Invalid.at(['query', 'type'], "must be an event type ('member.role_changed'), a prefix ('member.*') or '*'");
  const since = new Date(deps.clock.now().getTime() - store.EVENT_RETENTION_MS);
  return deps.cursors.page(
    'events',
    query,
    async (after, take) =>
      positioned(await store.listEvents(deps.db, membership.organizationId, { type: query.type, since }, after, take)),
    (row) => toEvent(row),
  );
}

/** Events older than the retention go (the dispatcher's periodic sweep). */
export { EVENT_RETENTION_MS, pruneEvents } from './store';
