import type { AppDeps } from '../domain/deps';
import type { Membership, Role } from '../domain/principal';
import { Conflict, NotFound } from '../lib/errors';
import type { PageRequest } from '../lib/pagination';
import { authorize } from '../access/roles';
import { toMember } from '../org/mappers';
import * as store from './store';
import { changed, recordChange } from '../audit';

const memberNotFound = () => new NotFound('member_not_found', 'The member could not be found.');

export async function listMembers(deps: AppDeps, membership: Membership, page: PageRequest) {
  authorize(membership, 'members.read');
  return deps.cursors.page(
    'members',
    page,
    async (after, take) => (await store.listMembers(deps.db, membership.organizationId, after, take)).map((r) => ({ ...r, createdAt: r.created_at })),
    (row) => toMember(row),
  );
}

export async function changeRole(deps: AppDeps, membership: Membership, memberId: string, role: Exclude<Role, 'owner'>) {
  authorize(membership, 'members.changeRole');
  const { organizationId } = membership;
  return deps.db.transaction().execute(async (trx) => {
    const before = await store.findMember(trx, organizationId, memberId);
    if (!before) throw memberNotFound();
    if (!(await store.setRole(trx, organizationId, memberId, role))) throw new Conflict('owner_role_immutable', "The owner's role cannot be changed.");
    await recordChange(trx, { action: 'member.role_changed', target: { type: 'member', id: memberId }, changes: changed({ role: before.role }, { role }) });
    return toMember({ ...before, role });
  });
}

/**
 * Removes a member (an admin removing someone, or a member leaving). In one transaction: the
 * membership ends (sessions lose the organization, grants to the member stop counting because
 * they join active members), the member's API keys are revoked and their team memberships go.
 */
export async function removeMember(deps: AppDeps, membership: Membership, memberId: string): Promise<void> {
  if (memberId !== membership.memberId) authorize(membership, 'members.remove');
  await removeFromOrganization(deps, membership.organizationId, memberId, memberId === membership.memberId ? 'member.left' : 'member.removed');
}

/** The removal itself, for the members route and SCIM deprovisioning alike (audited as `action`). */
export async function removeFromOrganization(deps: AppDeps, organizationId: string, memberId: string, action: 'member.left' | 'member.removed' = 'member.removed'): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const removed = await store.markRemoved(trx, organizationId, memberId, now);
    if (!removed) {
      if (await store.findMember(trx, organizationId, memberId)) throw new Conflict('owner_cannot_be_removed', 'The owner cannot be removed from the organization.');
      throw memberNotFound();
    }
    await store.revokeApiKeysOf(trx, organizationId, memberId, now);
    await store.leaveAllTeams(trx, organizationId, memberId);
    await recordChange(trx, { action, target: { type: 'member', id: memberId }, organizationId });
  });
}
