import type { Membership, PermissionSet, Principal } from '../domain/principal';
import { Forbidden, Invalid } from '../lib/errors';
import { builtInPermissions, isBuiltInRole } from './builtin-roles';
import { isPermission, PERMISSION_KEYS } from './permissions';

/**
 * What a role allows: a built-in role's permissions come from the catalogue (src/access), a custom
 * role's from its stored keys, kept only while they are in the catalogue (a key the service no
 * longer has grants nothing).
 */
export function permissionsOfRole(role: { key: string; builtIn: boolean; permissions: readonly string[] | null }): PermissionSet {
  if (role.builtIn && isBuiltInRole(role.key)) return builtInPermissions(role.key);
  return new Set((role.permissions ?? []).filter(isPermission));
}

/** An API key's scope narrows its creator's current permissions; no scope keeps them all. */
export function narrowedBy(permissions: PermissionSet, scope: readonly string[] | null): PermissionSet {
  if (scope === null) return permissions;
  return new Set(scope.filter((key) => permissions.has(key)));
}

/** The catalogue's order, for lists shown to clients. */
export function sortedPermissions(permissions: Iterable<string>): string[] {
  const held = new Set(permissions);
  return PERMISSION_KEYS.filter((key) => held.has(key));
}

/** Every key must be in the catalogue: else 400 naming the index (`["body", "permissions", "3"]`). */
export function requireKnownPermissions(keys: readonly string[], path: string[]): void {
  keys.forEach((key, index) => {
    if (!isPermission(key)) throw Invalid.at([...path, String(index)], `unknown permission ${key} (see GET /v1/permissions)`);
  });
}

/**
 * No escalation: nobody creates, edits or assigns (role change, invitation, API-key scope) a set
 * of permissions they do not hold themselves. 403 `permission_not_held` naming the first missing
 * keys.
 */
export function requireHeld(membership: Membership, keys: Iterable<string>): void {
  const missing = notHeld(membership.permissions, keys);
  if (missing.length > 0) {
    throw new Forbidden('permission_not_held', `You cannot give permissions you do not hold: ${missing.slice(0, 5).join(', ')}.`);
  }
}

/**
 * No acting on a higher member, the same subset rule turned on the target: nobody changes the role
 * of, suspends or removes a member whose permissions are not all their own. 403
 * `member_permissions_not_held` naming the first keys the actor lacks.
 */
export function requireActsOn(actor: PermissionSet, target: PermissionSet): void {
  const missing = notHeld(actor, target);
  if (missing.length > 0) {
    throw new Forbidden(
      'member_permissions_not_held',
      `You cannot change the role of, suspend or remove a member holding permissions you do not hold: ${missing.slice(0, 5).join(', ')}.`,
    );
  }
}

function notHeld(held: PermissionSet, keys: Iterable<string>): string[] {
  return [...keys].filter((key) => !held.has(key));
}

/**
 * Actions that change who can do what need a session authenticated within
 * `FRESH_SESSION_MAX_AGE`; API keys never pass.
 */
export function requireFreshSession(principal: Principal, now: Date, maxAgeMs: number): void {
  const at = principal.kind === 'session' ? principal.authenticatedAt : null;
  if (!at || now.getTime() - at.getTime() > maxAgeMs) {
    throw new Forbidden('fresh_session_required', 'This action needs a recently authenticated session: reauthenticate (POST /v1/auth/reauthenticate) and retry.');
  }
}

/** Only the organization's owner. */
export function requireOwner(membership: Membership): void {
  if (membership.role !== 'owner') throw new Forbidden('owner_required', 'Only the owner of the organization may do this.');
}

type RoleDefinition = { key: string; builtIn: boolean; permissions: readonly string[] | null };

/**
 * `requireActsOn` for two roles as stored (the actor's: undefined holds nothing): the target's
 * permissions must all be the actor's. No target, or the owner, is left to each action's own rule.
 */
export function requireRoleActsOn(actor: RoleDefinition | undefined, target: RoleDefinition | undefined): void {
  if (!target || target.key === 'owner') return;
  requireActsOn(actor ? permissionsOfRole(actor) : new Set(), permissionsOfRole(target));
}
