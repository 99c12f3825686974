import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { positioned, type PageRequest, type Position } from '../lib/pagination';
import * as store from './directory-store';
import type { DirectoryUserRow } from './directory-store';

/**
 * GET /v1/scim/users: the directory users as administrators see them, so they can tell who did
 * not link and why. A directory user whose member was removed through the API shows
 * `member_removed` until it changes (and links again).
 */
export function toDirectoryUser(row: DirectoryUserRow): components['schemas']['DirectoryUser'] {
  const linked = row.member_user_id !== null;
  return {
    id: row.id,
    userName: row.user_name,
    externalId: row.external_id,
    active: row.active,
    email: row.email,
    linkState: linked ? 'linked' : 'unlinked',
    linkReason: linked ? null : (row.link_reason ?? 'member_removed'),
    memberId: linked ? row.member_id : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export async function listDirectoryUsers(deps: AppDeps, membership: Membership, query: PageRequest & { linkState?: 'linked' | 'unlinked' }) {
  return deps.cursors.page<DirectoryUserRow & Position, components['schemas']['DirectoryUser']>(
    `directory-users:${query.linkState ?? 'all'}`,
    query,
    async (after, take) => positioned(await store.listForAdmin(deps.db, membership.organizationId, query.linkState, after, take)),
    toDirectoryUser,
  );
}
