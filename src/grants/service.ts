import type { components } from '../../generated/api';
import type { Db } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import type { ResourceRole } from '../access/resource-roles';
import { Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest } from '../lib/pagination';
import type { GrantedResource } from './resources';
import * as store from './store';
import { created as createdFields, deleted, recordChange } from '../audit';

export type AccessGrant = components['schemas']['AccessGrant'];

/**
 * Checks that the resource exists in the caller's organization (else 404) and that the caller has
 * `needed` on it (else 403). Each area supplies its own; grants code stays resource-agnostic.
 */
export type ResourceGuard = (db: Db, membership: Membership, resourceId: string, needed: ResourceRole) => Promise<unknown>;

export function toGrant(row: store.GrantRow): AccessGrant {
  return {
    id: row.id,
    orgMembershipId: row.member_id,
    teamId: row.team_id,
    orgWide: row.org_wide,
    role: row.role,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    removedAt: row.removed_at ? row.removed_at.toISOString() : null,
  };
}

export interface GrantBody {
  orgMembershipId?: string;
  teamId?: string;
  orgWide?: boolean;
  role: ResourceRole;
}

/** Managers list every grant of the resource, revoked ones included, newest first. */
export async function listAccess(deps: AppDeps, resource: GrantedResource, guard: ResourceGuard, membership: Membership, resourceId: string, page: PageRequest) {
  await guard(deps.db, membership, resourceId, 'manager');
  return deps.cursors.jsonPage<AccessGrant>(resource.listName, page, (after, limit) => store.grantsPage(deps.db, resource, membership.organizationId, resourceId, after, limit));
}

/** Exactly one target: a member, a team, or the whole organization. */
export function targetOf(body: Pick<GrantBody, 'orgMembershipId' | 'teamId' | 'orgWide'>): store.GrantTarget {
  const targets: store.GrantTarget[] = [];
  if (body.orgMembershipId !== undefined) targets.push({ memberId: body.orgMembershipId });
  if (body.teamId !== undefined) targets.push({ teamId: body.teamId });
  if (body.orgWide === true) targets.push({ orgWide: true });
  if (targets.length !== 1) {
    throw Invalid.at(['body'], 'Give exactly one target: orgMembershipId, teamId or orgWide: true.');
  }
  return targets[0]!;
}

/** Grants a role, or updates the role of the target's active grant (`created` false). */
export async function grantAccess(deps: AppDeps, resource: GrantedResource, guard: ResourceGuard, membership: Membership, resourceId: string, body: GrantBody) {
  const target = targetOf(body);
  const { organizationId } = membership;
  return deps.db.transaction().execute(async (trx) => {
    await guard(trx, membership, resourceId, 'manager');
    if ('memberId' in target && !(await store.memberExists(trx, organizationId, target.memberId))) {
      throw new NotFound('member_not_found', 'No such member in this organization.');
    }
    if ('teamId' in target && !(await store.teamExists(trx, organizationId, target.teamId))) {
      throw new NotFound('team_not_found', 'No such team in this organization.');
    }
    const { row, created } = await store.upsertGrant(trx, resource, {
      id: newId(resource.grantIdKind),
      organizationId,
      resourceId,
      target,
      role: body.role,
      createdByMemberId: membership.memberId,
      now: deps.clock.now(),
    });
    await recordChange(trx, deps.audit, {
      action: `${resource.name}.access_granted`,
      target: { type: resource.name, id: resourceId },
      changes: { grantId: { from: null, to: row.id }, ...createdFields({ ...target, role: body.role }) },
    });
    return { created, item: toGrant(row) };
  });
}

export async function revokeAccess(deps: AppDeps, resource: GrantedResource, guard: ResourceGuard, membership: Membership, resourceId: string, grantId: string) {
  return deps.db.transaction().execute(async (trx) => {
    await guard(trx, membership, resourceId, 'manager');
    const row = await store.revokeGrant(trx, resource, membership.organizationId, resourceId, grantId, deps.clock.now());
    if (!row) throw new NotFound('grant_not_found', `No such grant on this ${resource.label}.`);
    const grant = toGrant(row);
    await recordChange(trx, deps.audit, {
      action: `${resource.name}.access_revoked`,
      target: { type: resource.name, id: resourceId },
      changes: { grantId: { from: grant.id, to: null }, ...deleted({ orgMembershipId: grant.orgMembershipId, teamId: grant.teamId, orgWide: grant.orgWide, role: grant.role }) },
    });
    return grant;
  });
}

/** The creator's manager grant (and an optional org-wide grant), to be written with the resource. */
export function creatorGrants(
  resource: GrantedResource,
  input: { organizationId: string; resourceId: string; memberId: string; now: Date; orgWideRole?: ResourceRole },
): store.NewGrant[] {
  const base = { organizationId: input.organizationId, resourceId: input.resourceId, createdByMemberId: input.memberId, now: input.now };
  const grants: store.NewGrant[] = [{ ...base, id: newId(resource.grantIdKind), target: { memberId: input.memberId }, role: 'manager' }];
  if (input.orgWideRole) grants.push({ ...base, id: newId(resource.grantIdKind), target: { orgWide: true }, role: input.orgWideRole });
  return grants;
}

/** Writes the creator's grants (see `creatorGrants`) in the resource's transaction. */
export async function grantCreator(
  trx: Db,
  resource: GrantedResource,
  input: { organizationId: string; resourceId: string; memberId: string; now: Date; orgWideRole?: ResourceRole },
): Promise<void> {
  await store.insertGrants(trx, resource, creatorGrants(resource, input));
}
