import { Forbidden, NotFound, Unauthorized } from '../lib/errors';
import type { HandlerContext, Membership, OperationId, Principal, Role } from '../http/types';

/**
 * Organization roles and the rules that use them, in one place. Ranks mirror the `roles` table
 * (a test checks they agree); a custom-role feature would load them from there instead.
 */
export const ROLE_RANK: Record<Role, number> = { owner: 30, admin: 20, member: 10 };

export function hasRole(membership: Membership, minimum: Role): boolean {
  return ROLE_RANK[membership.role] >= ROLE_RANK[minimum];
}

export function isAdmin(membership: Membership): boolean {
  return hasRole(membership, 'admin');
}

interface Rule {
  /** The lowest organization role allowed to take the action. */
  minimum: Role;
  /** The stable `reason` of the 403 when the caller's role is below `minimum`. */
  reason: string;
  message: string;
}

const ADMIN_REQUIRED = { minimum: 'admin', reason: 'org_admin_required', message: 'This action needs an organization admin.' } as const;
const ANY_MEMBER = { minimum: 'member', reason: 'org_member_required', message: 'This action needs a member of the organization.' } as const;

/**
 * Action → the rule that guards it. Services call `authorize(membership, action)` rather than
 * comparing roles themselves, so every organization-level permission reads from this table.
 * Resource roles (viewer/editor/manager on marketplaces, plugins, connectors) live in
 * resource-roles.ts; organization admins pass those checks as `manager`.
 */
export const PERMISSIONS = {
  'org.read': ANY_MEMBER,
  'org.update': ADMIN_REQUIRED,
  'members.read': ANY_MEMBER,
  'members.changeRole': ADMIN_REQUIRED,
  /** Removing someone else; leaving (removing oneself) needs no role. */
  'members.remove': ADMIN_REQUIRED,
  'invitations.manage': ADMIN_REQUIRED,
  'teams.read': ANY_MEMBER,
  'teams.manage': ADMIN_REQUIRED,
  'apiKeys.manage': ADMIN_REQUIRED,
  /** Any organization-wide administration another area guards (grants, settings, clients). */
  'org.admin': ADMIN_REQUIRED,
} as const satisfies Record<string, Rule>;

export type Action = keyof typeof PERMISSIONS;

export function can(membership: Membership, action: Action): boolean {
  return hasRole(membership, PERMISSIONS[action].minimum);
}

/** Throws 403 `{error: 'forbidden', reason, message}` with the rule's stable reason. */
export function authorize(membership: Membership, action: Action): void {
  const rule: Rule = PERMISSIONS[action];
  if (!hasRole(membership, rule.minimum)) throw new Forbidden(rule.reason, rule.message);
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
  authorize(membership, 'org.admin');
}

/** Session-only routes: an API key is answered like no credentials (supporting-interface §2). */
export function requireSession(principal: Principal): void {
  if (principal.kind !== 'session' || !principal.sessionId) throw new Unauthorized('This route needs a signed-in session.');
}

export function requirePlatformAdmin(principal: Principal): void {
  if (!principal.isPlatformAdmin) throw new Forbidden('platform_admin_required', 'This action needs a platform admin.');
}
