import type { PermissionSet, Role } from '../domain/principal';
import { PERMISSION_CATALOGUE, PERMISSION_KEYS } from './permissions';

/**
 * The built-in roles. Ranks mirror the `roles` table (a test checks they agree); each role holds
 * every permission whose `minimum` it reaches, so owner ⊇ admin ⊇ member.
 */
export const ROLE_RANK: Record<Role, number> = { owner: 30, admin: 20, member: 10 };

function holds(role: Role): PermissionSet {
  return new Set(PERMISSION_KEYS.filter((key) => ROLE_RANK[role] >= ROLE_RANK[PERMISSION_CATALOGUE[key].minimum]));
}

const BUILT_IN_PERMISSIONS: Record<Role, PermissionSet> = { owner: holds('owner'), admin: holds('admin'), member: holds('member') };

export function isBuiltInRole(key: string): key is Role {
  return Object.hasOwn(ROLE_RANK, key);
}

/** The permissions of a built-in role (shared, read-only sets). */
export function builtInPermissions(role: Role): PermissionSet {
  return BUILT_IN_PERMISSIONS[role];
}
