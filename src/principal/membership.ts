import type { Membership } from '../domain/principal';
import { narrowedBy, permissionsOfRole } from '../access/role-permissions';

/**
 * A membership as the principal queries read it (joined to its role row): the role's permissions,
 * narrowed by an API key's scope when there is one.
 */
export function membershipOf(row: {
  organizationId: string;
  memberId: string;
  role: string;
  roleBuiltIn: boolean | null;
  rolePermissions: string[] | null;
  scope?: string[] | null;
}): Membership {
  const permissions = permissionsOfRole({ key: row.role, builtIn: row.roleBuiltIn ?? false, permissions: row.rolePermissions });
  return { organizationId: row.organizationId, memberId: row.memberId, role: row.role, permissions: narrowedBy(permissions, row.scope ?? null) };
}
