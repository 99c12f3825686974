import type { AnyPrincipal } from '../domain/principal';
import { Forbidden } from '../lib/errors';

/** Operations that are the user's own, not the active organization's: they stay open behind every gate. */
function isUsersOwn(operation: { path: string; operationId?: string }): boolean {
  const path = operation.path;
  return path === '/v1/me' || path.startsWith('/v1/me/') || path.startsWith('/v1/auth/');
}

/**
 * Beyond the user's own operations, a session under the SSO gate keeps what belongs to no one
 * organization: creating another organization, accepting an invitation (their own checks apply),
 * the platform administrators' routes.
 */
const OUTSIDE_THE_ORGANIZATION = new Set(['createOrg', 'acceptInvitation', 'getBootstrapStatus', 'bootstrap']);

/**
 * What a session may reach while its organization requires something of it that it lacks. The
 * router asks this once per request, before the handler, with the operation.
 * - Under `requireMfa` (accounts-and-email §8) a session with no second factor keeps the account's
 *   own routes (`/v1/me…`: profile, enrolment, organization switching) and `/v1/auth/…` (sign-out,
 *   reauthentication, the second step) and nothing else, so its user can enrol and carry on.
 * - Under SSO enforcement (enterprise-identity §2) a session not made through one of the
 *   organization's own connections (the owner's excepted) gets 403 `sso_required` on the
 *   organization's routes from its next request; the account's own routes stay open, so the user
 *   can switch to another organization or sign in through SSO.
 */
export function assertSessionGates(principal: AnyPrincipal | null, operation: { path: string; operationId?: string }): void {
  if (!principal || principal.kind !== 'session') return;
  if (principal.mfaMissing && !isUsersOwn(operation)) {
    throw new Forbidden(
      'mfa_enrollment_required',
      'This organization requires a second factor: enrol one (POST /v1/me/mfa/totp or POST /v1/me/passkeys/options), or sign in again with it.',
    );
  }
  if (principal.ssoMissing && !isUsersOwn(operation) && !OUTSIDE_THE_ORGANIZATION.has(operation.operationId ?? '') && !operation.path.startsWith('/v1/admin/')) {
    throw new Forbidden('sso_required', 'This organization requires single sign-on through its own identity provider: sign in through SSO (POST /v1/auth/sso/start).');
  }
}
