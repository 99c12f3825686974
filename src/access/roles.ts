import { Forbidden, NotFound, Unauthorized } from '../lib/errors';
import { isUserPrincipal, type AnyPrincipal, type Membership, type Principal, type WorkerPrincipal, type WorkerTokenClaim } from '../domain/principal';
import { PERMISSION_CATALOGUE, type Permission } from './permissions';

export { ROLE_RANK, builtInPermissions, isBuiltInRole } from './builtin-roles';
/** The catalogue under its wave-1 name: action → description, lowest built-in role, 403 reason. */
export { PERMISSION_CATALOGUE as PERMISSIONS, type Permission } from './permissions';

/** Organization-level actions are permissions (kept as `Action` for the callers that name it so). */
export type Action = Permission;

/**
 * May this membership take the action? The one answer for organization-level permissions: the
 * membership carries its permission set (its role's, narrowed by an API key's scope), resolved
 * with the principal, so no check reads the database.
 */
export function can(membership: Membership, permission: Permission): boolean {
  return membership.permissions.has(permission);
}

/** Throws 403 `{error: 'forbidden', reason, message}`: the key's stable reason, the message names the key. */
export function authorize(membership: Membership, permission: Permission): void {
  if (!can(membership, permission)) throw missingPermission(permission);
}

export function missingPermission(permission: Permission): Forbidden {
  return new Forbidden(PERMISSION_CATALOGUE[permission].reason, `This action needs the permission ${permission}.`);
}

/** What the handlers hold: the principal the security handlers resolved (null on public operations). */
interface WithPrincipal {
  principal: AnyPrincipal | null;
}

/** The user calling an authenticated operation (session or API key). */
export function principalOf(ctx: WithPrincipal): Principal {
  if (!ctx.principal || !isUserPrincipal(ctx.principal)) throw new Unauthorized();
  return ctx.principal;
}

/**
 * The user behind the caller, for what acts on the caller's own account (`x-access: account`, the
 * `/v1/me` routes, creating an organization). A service account has no user: 401, as an API key
 * gets on a session-only route.
 */
export function userIdOf(principal: Principal): string {
  if (principal.userId === null) throw new Unauthorized('This route acts on a user account; a service account has none.');
  return principal.userId;
}

/** The worker calling an operation secured by `workerToken`. */
export function workerOf(ctx: WithPrincipal): WorkerPrincipal {
  if (ctx.principal?.kind !== 'worker') throw new Unauthorized();
  return ctx.principal;
}

/** The unchecked worker token of an operation that verifies it in its own statement (the heartbeat). */
export function workerClaimOf(ctx: WithPrincipal): WorkerTokenClaim {
  if (ctx.principal?.kind !== 'workerClaim') throw new Unauthorized();
  return ctx.principal;
}

/** The caller's membership in the active organization; none is answered like a missing organization. */
export function membershipOf(ctx: WithPrincipal): Membership {
  const principal = principalOf(ctx);
  if (!principal.membership) throw new NotFound('organization_not_found', 'No active organization for this session.');
  return principal.membership;
}

/** Session-only routes: an API key is answered like no credentials (docs/people-and-roles.md#members-teams-api-keys-admin). */
export function requireSession(principal: Principal): void {
  if (principal.kind !== 'session' || !principal.sessionId) throw new Unauthorized('This route needs a signed-in session.');
}

export function requirePlatformAdmin(principal: Principal): void {
  if (!principal.isPlatformAdmin) throw new Forbidden('platform_admin_required', 'This action needs a platform admin.');
}

/**
 * The worker acting for the member of a delegated token (an access token a worker exchanged for
 * the member, carrying `act`: docs/workers-and-usage.md#the-credential-broker). A session, an API
 * key, a member's or service account's token, and a worker's own token are 403 `delegation_required`.
 */
export function delegatedWorkerOf(principal: Principal): string {
  if (principal.kind !== 'accessToken' || !principal.worker?.delegated) {
    throw new Forbidden('delegation_required', "Only an agent acting for a member may do this: use an access token a worker exchanged for the member (RFC 8693 token exchange, with act).");
  }
  return principal.worker.id;
}

/**
 * The caller made the resource (`createdBy`, its creator's member id): creators may always change
 * what they made. A worker's own token borrows its creator's membership but is not its creator
 * (docs/workers-and-usage.md#workers-as-oauth-clients): it needs the permission like anyone else.
 */
export function isCreator(membership: Membership, createdBy: string | null): boolean {
  return membership.borrowed !== true && createdBy === membership.memberId;
}
