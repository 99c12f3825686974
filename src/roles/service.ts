import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, PermissionSet, Principal } from '../domain/principal';
import type { Db } from '../db/schema';
import { authorize } from '../access/roles';
import { PERMISSION_CATALOGUE, PERMISSION_KEYS } from '../access/permissions';
import { permissionsOfRole, requireActsOn, requireRoleActsOn, requireFreshSession, requireHeld, requireKnownPermissions, sortedPermissions } from '../access/role-permissions';
import { isUniqueViolation } from '../db/errors';
import { Conflict, Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest, Position } from '../lib/pagination';
import { changed, created, deleted, recordChange } from '../audit';
import * as store from './store';
import { reassignRole } from '../members/memberships';
import { reassignInvitationRole } from '../invitations/roles';
import { reassignConnectionRole } from '../sso/roles';

export { insertBuiltInRoles } from './store';

type Schemas = components['schemas'];

const roleNotFound = () => new NotFound('role_not_found', 'The role could not be found.');
const builtInImmutable = () => new Conflict('builtin_role_immutable', 'Built-in roles (owner, admin, member) cannot be changed or deleted.');

function permissionsOf(row: store.RoleRow) {
  return permissionsOfRole({ key: row.key, builtIn: row.built_in, permissions: row.permissions });
}

function toRole(row: store.RoleRow): Schemas['OrganizationRole'] {
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    description: row.description,
    permissions: sortedPermissions(permissionsOf(row)),
    builtIn: row.built_in,
    memberCount: row.member_count,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function listPermissions(): Schemas['PermissionList'] {
  return { items: PERMISSION_KEYS.map((key) => ({ key, description: PERMISSION_CATALOGUE[key].description })) };
}

export async function listRoles(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page<store.RoleRow & Position, Schemas['OrganizationRole']>('roles', page, (after, take) => store.listRoles(deps.db, membership.organizationId, after, take), toRole);
}

export async function getRole(deps: AppDeps, membership: Membership, roleId: string) {
  const row = await store.findRole(deps.db, membership.organizationId, roleId);
  if (!row) throw roleNotFound();
  return toRole(row);
}

/** What every role write checks after the router's `roles.manage` and session: a fresh session. */
function guardRoleWrite(deps: AppDeps, principal: Principal): void {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
}

export async function createRole(deps: AppDeps, principal: Principal, membership: Membership, body: Schemas['CreateRoleBody']) {
  guardRoleWrite(deps, principal);
  requireKnownPermissions(body.permissions, ['body', 'permissions']);
  requireHeld(membership, body.permissions);
  const id = newId('role');
  const role = { key: body.key, name: body.name, description: body.description ?? '', permissions: body.permissions };
  try {
    await deps.db.transaction().execute(async (trx) => {
      await store.insertRole(trx, { id, organizationId: membership.organizationId, ...role, now: deps.clock.now() });
      await recordChange(trx, deps.audit, { action: 'role.created', target: { type: 'role', id }, changes: created(role) });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new Conflict('role_key_taken', `The organization already has a role with the key ${body.key}.`);
    throw err;
  }
  return getRole(deps, membership, id);
}

export async function updateRole(deps: AppDeps, principal: Principal, membership: Membership, roleId: string, body: Schemas['UpdateRoleBody']) {
  guardRoleWrite(deps, principal);
  await deps.db.transaction().execute(async (trx) => {
    // Another organization's role is 404 before anything about the body is judged.
    const locked = await store.lockRole(trx, membership.organizationId, roleId);
    if (!locked) throw roleNotFound();
    if (locked.built_in) throw builtInImmutable();
    if (body.permissions) requireKnownPermissions(body.permissions, ['body', 'permissions']);
    const current = (await store.findRole(trx, membership.organizationId, roleId))!;
    // The role's resulting permissions must all be held by the caller (no escalation).
    requireHeld(membership, body.permissions ?? permissionsOf(current));
    const patch = { name: body.name, description: body.description, permissions: body.permissions };
    await store.updateRole(trx, membership.organizationId, roleId, patch, deps.clock.now());
    const before = { name: current.name, description: current.description, permissions: current.permissions };
    await recordChange(trx, deps.audit, { action: 'role.updated', target: { type: 'role', id: roleId }, changes: changed(before, patch) });
  });
  return getRole(deps, membership, roleId);
}

/**
 * Deletes a custom role in one transaction. Held by active members, pending invitations or SSO
 * connections (default role, group mappings): 409 `role_in_use`, unless `reassignTo` names the
 * role they move to (never `owner`, never the role itself, and only a role whose permissions the
 * caller holds). A connection left naming a deleted role would hand out `member` at sign-in
 * without anyone having chosen it.
 */
export async function deleteRole(deps: AppDeps, principal: Principal, membership: Membership, roleId: string, reassignTo: string | undefined) {
  guardRoleWrite(deps, principal);
  const { organizationId } = membership;
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const locked = await store.lockRole(trx, organizationId, roleId);
    if (!locked) throw roleNotFound();
    if (locked.built_in) throw builtInImmutable();
    const target = reassignTo === undefined ? undefined : await reassignTarget(trx, membership, reassignTo, locked.key);
    const holders = await store.holdersOf(trx, organizationId, locked.key, now);
    if (!target && holders.members + holders.invitations + holders.connections > 0) {
      throw new Conflict(
        'role_in_use',
        `The role is held by ${holders.members} member(s), ${holders.invitations} pending invitation(s) and ${holders.connections} SSO connection(s) (default role or group mapping); give reassignTo.`,
      );
    }
    // Removed members and past invitations keep a role key too: they follow the reassignment, or
    // fall back to `member` (they grant nothing).
    // Every row naming the role (members, removed ones included; invitations of any status; SSO
    // connections' default role and group mappings) moves, each through the area that owns it.
    const toKey = target?.key ?? 'member';
    await reassignRole(trx, organizationId, locked.key, toKey);
    await reassignInvitationRole(trx, organizationId, locked.key, toKey);
    await reassignConnectionRole(trx, organizationId, locked.key, toKey, now);
    await store.deleteRole(trx, organizationId, roleId);
    const gone = {
      key: locked.key,
      reassignedTo: target?.key,
      membersReassigned: target ? holders.members : undefined,
      connectionsReassigned: target && holders.connections > 0 ? holders.connections : undefined,
    };
    await recordChange(trx, deps.audit, { action: 'role.deleted', target: { type: 'role', id: roleId }, changes: deleted(gone) });
  });
}

async function reassignTarget(db: Db, membership: Membership, key: string, deleting: string): Promise<store.RoleRow> {
  const at = ['query', 'reassignTo'];
  if (key === 'owner') throw Invalid.at(at, 'ownership cannot be given by reassignment');
  if (key === deleting) throw Invalid.at(at, 'must name another role than the one deleted');
  const target = await store.findRoleByKey(db, membership.organizationId, key);
  if (!target) throw Invalid.at(at, `the organization has no role ${key}`);
  requireHeld(membership, permissionsOf(target));
  return target;
}

/**
 * A role a caller may give (role change, invitation): any role of the organization but `owner`
 * (400 naming `path`), whose permissions the caller holds (403 `permission_not_held`).
 */
export async function assignableRole(db: Db, membership: Membership, key: string, path: string[]): Promise<string> {
  if (key === 'owner') throw ownerNotAssignable(path);
  return requireAssignable(membership, key, await store.findRoleGrant(db, membership.organizationId, key), path);
}

const ownerNotAssignable = (path: string[]) => Invalid.at(path, 'owner is never assigned this way; transfer ownership instead');

/**
 * assignableRole's checks on a role already read (`role`: the organization's role of that key, as
 * `findRoleGrant` reads it, e.g. in a query that also reads other things; undefined: none).
 */
export function requireAssignable(membership: Membership, key: string, role: store.RoleGrant | undefined, path: string[]): string {
  if (key === 'owner') throw ownerNotAssignable(path);
  if (!role) throw Invalid.at(path, `the organization has no role ${key}`);
  requireHeld(membership, permissionsOfRole({ key: role.key, builtIn: role.built_in, permissions: role.permissions }));
  return role.key;
}

/**
 * Inside a transaction that writes role keys where no foreign key guards them (SSO connections):
 * locks the roles before they are checked, so a concurrent delete either waits and then sees the
 * writer as a holder, or wins and the check finds no such role.
 */
export async function holdRoles(db: Db, organizationId: string, keys: string[]): Promise<void> {
  await store.shareLockRoles(db, organizationId, [...new Set(keys)]);
}

/** GET /v1/members/{memberId}/permissions: the member themself, or `members.read`. */
export async function memberPermissions(deps: AppDeps, membership: Membership, memberId: string): Promise<string[]> {
  if (memberId !== membership.memberId) authorize(membership, 'members.read');
  const role = await store.memberRole(deps.db, membership.organizationId, memberId);
  if (!role) throw new NotFound('member_not_found', 'The member could not be found.');
  return sortedPermissions(permissionsOfRole({ key: role.role, builtIn: role.built_in, permissions: role.permissions }));
}

/** A member's current permissions (a suspended member's included); undefined: no such active member. */
export async function permissionsOfMember(db: Db, organizationId: string, memberId: string): Promise<{ role: string; permissions: PermissionSet } | undefined> {
  const role = await store.memberRole(db, organizationId, memberId);
  return role && { role: role.role, permissions: permissionsOfRole({ key: role.role, builtIn: role.built_in, permissions: role.permissions }) };
}

/**
 * Before a role change, suspension or removal: the target's permissions must all be the actor's
 * (403 `member_permissions_not_held`). The owner is left to each action's owner rule (a 409), and
 * an unknown member to its 404.
 */
export async function requireMayActOnMember(db: Db, actor: PermissionSet, organizationId: string, memberId: string): Promise<void> {
  const target = await permissionsOfMember(db, organizationId, memberId);
  if (!target || target.role === 'owner') return;
  requireActsOn(actor, target.permissions);
}

/**
 * The same check for an actor named by its member id (a SCIM token acts with its creator's
 * permissions; no creator, or a removed one, holds none): one call reads both members' roles.
 */
export async function requireMemberMayActOn(db: Db, organizationId: string, actorMemberId: string | null, memberId: string): Promise<void> {
  const roleOf = (row: { role: string; built_in: boolean; permissions: string[] } | undefined) => row && { key: row.role, builtIn: row.built_in, permissions: row.permissions };
  const actor = actorMemberId === null ? undefined : await store.memberRole(db, organizationId, actorMemberId);
  requireRoleActsOn(roleOf(actor), roleOf(await store.memberRole(db, organizationId, memberId)));
}
