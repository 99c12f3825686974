import type { BuiltInRole, PermissionSet } from '../domain/principal';
import { PERMISSION_CATALOGUE, PERMISSION_KEYS } from './permissions';

/**
 * The built-in roles. Ranks mirror the `roles` table (a test checks they agree); each role holds
 * every permission whose `minimum` it reaches, so owner ⊇ admin ⊇ member.
 */
export const ROLE_RANK: Record<BuiltInRole, number> = { owner: 30, admin: 20, member: 10 };

function holds(role: BuiltInRole): PermissionSet {
  return new Set(PERMISSION_KEYS.filter((key) => ROLE_RANK[role] >= ROLE_RANK[PERMISSION_CATALOGUE[key].minimum]));
}

const BUILT_IN_PERMISSIONS: Record<BuiltInRole, PermissionSet> = { owner: holds('owner'), admin: holds('admin'), member: holds('member') };

/** Names and descriptions of the built-in role rows every organization gets. */
export const BUILT_IN_ROLE_DEFINITIONS: readonly { key: BuiltInRole; name: string; description: string }[] = [
  { key: 'owner', name: 'Owner', description: 'Owns the organization; exactly one per organization. Holds every permission.' },
  { key: 'admin', name: 'Admin', description: 'Manages the organization and is manager on every resource.' },
  { key: 'member', name: 'Member', description: 'Uses what is granted to them.' },
];

export function isBuiltInRole(key: string): key is BuiltInRole {
  return Object.hasOwn(ROLE_RANK, key);
}

/** The permissions of a built-in role (shared, read-only sets). */
export function builtInPermissions(role: BuiltInRole): PermissionSet {
  return BUILT_IN_PERMISSIONS[role];
}
