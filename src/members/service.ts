import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership, PermissionSet, Principal } from '../domain/principal';
import { Conflict, Forbidden, Invalid, NotFound } from '../lib/errors';
import { DEFAULT_PAGE_SIZE, MAX_CURSOR_LENGTH, MAX_PAGE_SIZE, positioned, type Cursors, type PageRequest, type Position } from '../lib/pagination';
import { RequestPreload } from '../principal/preload';
import { principalFromSession, principalFromSessionWith, type LoaderRequest } from '../principal';
import { authorize } from '../access/roles';
import { requireFreshSession, requireOwner } from '../access/role-permissions';
import { isForeignKeyViolation } from '../db/errors';
import { assignableRole, requireMayActOnMember } from '../roles/service';
import { toMember } from './mappers';
import { revokeKeysOfMember } from '../api-keys/service';
import { leaveAllTeams } from '../teams/service';
import * as store from './store';
import { recordChange } from '../audit';

const memberNotFound = () => new NotFound('member_not_found', 'The member could not be found.');

/** Pages read together with the session that asked for them (src/principal/preload.ts), with the cursor they were read for. */
const prefetched = new RequestPreload<store.PreloadedMembersPage & { cursor: string | undefined }>();

/**
 * The page a query asks for, as sent: its size, and its cursor with the position that cursor
 * holds; null for a query validation will refuse or a cursor that is not a valid one of this list
 * (the handler answers those as before).
 */
function pageAsked(query: Record<string, unknown>, cursors: Cursors | undefined): { limit: number; cursor: string | undefined; after: Position | null } | null {
  let limit = DEFAULT_PAGE_SIZE;
  if (query.limit !== undefined) {
    if (typeof query.limit !== 'string' || !/^[1-9][0-9]{0,2}$/.test(query.limit)) return null;
    limit = Number(query.limit);
    if (limit > MAX_PAGE_SIZE) return null;
  }
  const cursor = query.cursor;
  if (cursor === undefined) return { limit, cursor: undefined, after: null };
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH || !cursors) return null;
  try {
    return { limit, cursor, after: cursors.decode('members', cursor) };
  } catch {
    return null;
  }
}

/**
 * GET /v1/members' session check and the page it asks for, first or later, in the same round trip
 * (registered as its session loader in src/server/registry.ts): the same principal as
 * principalFromSession; listMembers takes the page.
 */
export async function loadSessionWithMembersPage(db: AppDeps['db'], token: string, now: Date, request: LoaderRequest): Promise<Principal | null> {
  const asked = pageAsked(request.query, request.cursors);
  if (asked === null) return principalFromSession(db, token, now);
  const found = await principalFromSessionWith(db, token, now, store.membersPagePreload(asked.limit, asked.after));
  if (!found) return null;
  const { principal, preloaded } = found;
  if (principal.membership && preloaded) prefetched.keep(principal.membership, { ...preloaded, cursor: asked.cursor });
  return principal;
}

export async function listMembers(deps: AppDeps, membership: Membership, page: PageRequest) {
  const ready = prefetched.take(membership);
  if (ready && ready.cursor === page.cursor && ready.limit === (page.limit ?? DEFAULT_PAGE_SIZE)) {
    return deps.cursors.ofJsonPage<ReturnType<typeof toListedMember>>('members', ready);
  }
  return deps.cursors.page(
    'members',
    page,
    async (after, take) => positioned(await store.listMembers(deps.db, membership.organizationId, after, take)),
    (row) => toListedMember(row),
  );
}

const toListedMember = (row: store.ListedMemberRow) => ({ ...toMember(row), directoryUserId: row.directory_user_id });

/**
 * Any role of the organization but `owner`, whose permissions the caller holds (no escalation);
 * the owner's own role never changes this way.
 */
export async function changeRole(deps: AppDeps, membership: Membership, memberId: string, role: string) {
  const { organizationId } = membership;
  let key = role;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      // Another organization's member is 404 before the role is judged.
      const before = await store.findMember(trx, organizationId, memberId);
      if (!before) throw memberNotFound();
      await requireMayActOnMember(trx, membership.permissions, organizationId, memberId);
      key = await assignableRole(trx, membership, role, ['body', 'role']);
      if (!(await store.setRole(trx, organizationId, memberId, key))) throw new Conflict('owner_role_immutable', "The owner's role cannot be changed.");
      await recordChange(trx, deps.audit, { action: 'member.role_changed', target: { type: 'member', id: memberId }, changes: { role: { from: before.role, to: key } } });
      return toMember({ ...before, role: key });
    });
  } catch (err) {
    // The role was deleted between the check and the update.
    if (isForeignKeyViolation(err)) throw Invalid.at(['body', 'role'], `the organization has no role ${key}`);
    throw err;
  }
}

/**
 * The owner hands ownership to another active member, who becomes owner while the previous owner
 * becomes admin, in one transaction. The owner row is locked first: a concurrent transfer waits,
 * then finds its caller no longer owner (403), so there is exactly one owner at every moment.
 */
export async function transferOwnership(deps: AppDeps, principal: Principal, membership: Membership, memberId: string) {
  requireOwner(membership);
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  const { organizationId } = membership;
  if (memberId === membership.memberId) throw new Conflict('already_owner', 'The member is already the owner.');
  await deps.db.transaction().execute(async (trx) => {
    if ((await store.lockOwner(trx, organizationId)) !== membership.memberId) {
      throw new Forbidden('owner_required', 'Only the owner of the organization may do this.');
    }
    const type = await store.lockMember(trx, organizationId, memberId);
    if (!type) throw memberNotFound();
    if (type === 'service_account') throw new Conflict('service_account_cannot_own', 'A service account cannot own the organization: transfer ownership to a person.');
    await store.setRoleOf(trx, organizationId, membership.memberId, 'admin');
    await store.setRoleOf(trx, organizationId, memberId, 'owner');
    await recordChange(trx, deps.audit, {
      action: 'organization.ownership_transferred',
      target: { type: 'organization', id: organizationId },
      changes: { ownerMemberId: { from: membership.memberId, to: memberId } },
    });
  });
  const member = await store.findMember(deps.db, organizationId, memberId);
  if (!member) throw memberNotFound();
  return toMember(member);
}

/**
 * Removes a member (an admin removing someone, or a member leaving). In one transaction: the
 * membership ends (sessions lose the organization, grants to the member stop counting because
 * they join active members), the member's API keys are revoked and their team memberships go.
 */
export async function removeMember(deps: AppDeps, membership: Membership, memberId: string, options: { mayLeave: boolean } = { mayLeave: true }): Promise<void> {
  const leaving = options.mayLeave && memberId === membership.memberId;
  if (!leaving) authorize(membership, 'members.remove');
  await removeFromOrganization(deps, membership.organizationId, memberId, leaving ? 'member.left' : 'member.removed', leaving ? null : membership.permissions);
}

/**
 * Ends a membership inside the caller's transaction, as DELETE /v1/members does: sessions lose
 * the organization, API keys are revoked, teams are left. False when the member is the owner
 * (or not an active member).
 */
export async function removeInTransaction(trx: Transaction<DB>, organizationId: string, memberId: string, now: Date): Promise<boolean> {
  if (!(await store.markRemoved(trx, organizationId, memberId, now))) return false;
  await revokeKeysOfMember(trx, organizationId, memberId, now);
  await leaveAllTeams(trx, organizationId, memberId);
  return true;
}

/**
 * The removal itself, for the members route and SCIM deprovisioning alike (audited as `action`).
 * `actor`: the remover's permissions, which must include all of the member's (null: the member
 * leaving).
 */
export async function removeFromOrganization(
  deps: AppDeps,
  organizationId: string,
  memberId: string,
  action: 'member.left' | 'member.removed' = 'member.removed',
  actor: PermissionSet | null = null,
): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    if (actor) await requireMayActOnMember(trx, actor, organizationId, memberId);
    if (!(await removeInTransaction(trx, organizationId, memberId, now))) {
      if (await store.findMember(trx, organizationId, memberId)) throw new Conflict('owner_cannot_be_removed', 'The owner cannot be removed from the organization.');
      throw memberNotFound();
    }
    await recordChange(trx, deps.audit, { action, target: { type: 'member', id: memberId }, organizationId });
  });
}
