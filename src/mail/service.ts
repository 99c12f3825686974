import type { components, operations } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import { positioned } from '../lib/pagination';
import * as store from './store';
import type { MessageRow } from './store';

type AdminMailMessage = components['schemas']['AdminMailMessage'];
type ListQuery = NonNullable<operations['adminListMail']['parameters']['query']>;

function toAdminMailMessage(row: MessageRow): AdminMailMessage {
  return {
    id: row.id,
    kind: row.kind as AdminMailMessage['kind'],
    to: row.recipient,
    status: row.status,
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: row.created_at.toISOString(),
    sentAt: row.sent_at?.toISOString() ?? null,
  };
}

/** GET /v1/admin/mail: the operators' view of delivery, newest first (platform admins: `x-platform-admin`, checked by the router). */
export async function listMail(deps: AppDeps, query: ListQuery) {
  const filter = { status: query.status, kind: query.kind };
  // The filters are part of the list's name: a cursor of one filtered list is refused by another.
  return deps.cursors.page(
    `admin-mail:${query.status ?? ''}:${query.kind ?? ''}`,
    query,
    async (after, take) => positioned(await store.listMessages(deps.db, filter, after, take)),
    (row) => toAdminMailMessage(row),
  );
}
