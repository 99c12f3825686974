import { Forbidden, NotFound, Unauthorized } from '../lib/errors';
import type { HandlerContext, Membership, OperationId, Principal, Role } from '../http/types';

/**
 * Organization roles and the rules that use them, in one place. Ranks mirror the `roles` table;
 * a custom-role feature would load them from there instead of this constant.
 */
export const ROLE_RANK: Record<Role, number> = { owner: 30, admin: 20, member: 10 };

export function isAdmin(membership: Membership): boolean {
  return ROLE_RANK[membership.role] >= ROLE_RANK.admin;
}

/** The caller of an authenticated operation (the security handlers guarantee one). */
export function principalOf<K extends OperationId>(ctx: HandlerContext<K>): Principal {
  if (!ctx.principal) throw new Unauthorized();
  return ctx.principal;
}

/** The caller's membership in the active organization; none is answered like a missing organization. */
export function membershipOf<K extends OperationId>(ctx: HandlerContext<K>): Membership {
  const principal = principalOf(ctx);
  if (!principal.membership) throw new NotFound('organization_not_found', 'No active organization for this session.');
  return principal.membership;
}

export function requireAdmin(membership: Membership): void {
  if (!isAdmin(membership)) throw new Forbidden('org_admin_required', 'This action needs an organization admin.');
}

export function requirePlatformAdmin(principal: Principal): void {
  if (!principal.isPlatformAdmin) throw new Forbidden('platform_admin_required', 'This action needs a platform admin.');
}
