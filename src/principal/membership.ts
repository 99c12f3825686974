import type { Membership, Role } from '../domain/principal';
import { builtInPermissions } from '../access/builtin-roles';

/** A membership as the principal queries read it: its role decides its permissions. */
export function membershipOf(row: { organizationId: string; memberId: string; role: string }): Membership {
  const role = row.role as Role;
  return { organizationId: row.organizationId, memberId: row.memberId, role, permissions: builtInPermissions(role) };
}
