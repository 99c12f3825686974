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
 * What an unverified user's session keeps while EMAIL_VERIFICATION is `required`
 * (docs/accounts.md#sign-up-and-e-mail-verification): `/v1/auth/…` (sign-out, verify and resend, reauthentication), its
 * account routes (`GET|PATCH|DELETE /v1/me`, `/v1/me/email`, `/v1/me/password`, `/v1/me/sessions…`)
 * and `POST /v1/invitations/accept` (accepting an invitation to its own address proves it). Not
 * enrolment, not organization switching: no organization, API key or resource is reached or made
 * by someone who has not shown they hold the address.
 */
const UNVERIFIED_ALLOWED_EXACT = new Set(['/v1/me', '/v1/me/email', '/v1/me/password', '/v1/me/sessions', '/v1/invitations/accept']);
const UNVERIFIED_ALLOWED_PREFIXES = ['/v1/auth/', '/v1/me/sessions/'];

/**
 * What the owner of an organization scheduled for deletion keeps in it (docs/organization-deletion.md#deletion):
 * the restore, and the exports, so a customer can still take their data.
 */
function ownerKeepsWhileDeleted(operation: { path: string; operationId?: string }): boolean {
  return operation.operationId === 'restoreOrg' || operation.path === '/v1/org/exports' || operation.path.startsWith('/v1/org/exports/');
}

/** The organization's own routes: not the user's, not what belongs to no organization, not the platform's. */
function isOrganizations(operation: { path: string; operationId?: string }): boolean {
  return !isUsersOwn(operation) && !OUTSIDE_THE_ORGANIZATION.has(operation.operationId ?? '') && !operation.path.startsWith('/v1/admin/');
}

export function unverifiedMayUse(pathTemplate: string): boolean {
  return UNVERIFIED_ALLOWED_EXACT.has(pathTemplate) || UNVERIFIED_ALLOWED_PREFIXES.some((prefix) => pathTemplate.startsWith(prefix));
}

/**
 * What a session may reach while its user or organization lacks something required of it. The
 * router asks this once per request, before the handler, with the operation.
 * - EMAIL_VERIFICATION `required`: an unverified user's session gets 403 `email_not_verified`
 *   beyond what `unverifiedMayUse` lists.
 * - Under `requireMfa` (docs/second-factors.md#requiring-it-of-an-organization) a session with no second factor keeps the account's
 *   own routes (`/v1/me…`: profile, enrolment, organization switching) and `/v1/auth/…` (sign-out,
 *   reauthentication, the second step) and nothing else, so its user can enrol and carry on.
 * - Under SSO enforcement (docs/sso.md#enforcement) a session not made through one of the
 *   organization's own connections (the owner's excepted) gets 403 `sso_required` on the
 *   organization's routes from its next request; the account's own routes stay open, so the user
 *   can switch to another organization or sign in through SSO.
 * - An organization scheduled for deletion: a session gets 403 `organization_deleted` on its
 *   routes (the owner keeps its exports and the restore); its other credentials already got 401.
 * - A person's API key under `requireMfa` while that person holds no factor gets 403
 *   `mfa_enrollment_required` everywhere (a service account's key is not a person's).
 */
export function assertSessionGates(principal: AnyPrincipal | null, operation: { path: string; operationId?: string }, emailVerificationRequired: boolean): void {
  if (principal?.kind === 'apiKey' && principal.mfaMissing) {
    // A person's API key follows its owner's standing: no route of the organization while they
    // hold no factor it requires (an API key reaches no /v1/me route to enrol with).
    throw new Forbidden(
      'mfa_enrollment_required',
      'This organization requires a second factor and this key\'s owner holds none: they enrol one (POST /v1/me/mfa/totp or POST /v1/me/passkeys/options) and the key works again.',
    );
  }
  if (!principal || principal.kind !== 'session') return;
  if (principal.emailUnverified && emailVerificationRequired && !unverifiedMayUse(operation.path)) {
    throw new Forbidden(
      'email_not_verified',
      'Confirm your e-mail address first: open the link in the message we sent (POST /v1/auth/verify-email/resend sends a new one).',
    );
  }
  if (principal.mfaMissing && !isUsersOwn(operation)) {
    throw new Forbidden(
      'mfa_enrollment_required',
      'This organization requires a second factor: enrol one (POST /v1/me/mfa/totp or POST /v1/me/passkeys/options), or sign in again with it.',
    );
  }
  if (principal.organizationDeleted && isOrganizations(operation) && !(principal.membership?.role === 'owner' && ownerKeepsWhileDeleted(operation))) {
    throw new Forbidden('organization_deleted', 'This organization is scheduled for deletion: only its owner may export its data or restore it (POST /v1/org/restore).');
  }
  if (principal.ssoMissing && isOrganizations(operation)) {
    throw new Forbidden('sso_required', 'This organization requires single sign-on through its own identity provider: sign in through SSO (POST /v1/auth/sso/start).');
  }
}

/**
 * The 403 reasons the gates above can answer on an operation a session may call: the contract
 * lists them with the operation's other codes (scripts/error-contract.ts).
 */
export function gateReasons(operation: { path: string; operationId?: string }): Array<'email_not_verified' | 'mfa_enrollment_required' | 'organization_deleted' | 'sso_required'> {
  const reasons: Array<'email_not_verified' | 'mfa_enrollment_required' | 'organization_deleted' | 'sso_required'> = [];
  if (!unverifiedMayUse(operation.path)) reasons.push('email_not_verified');
  if (!isUsersOwn(operation)) reasons.push('mfa_enrollment_required');
  if (isOrganizations(operation)) reasons.push('organization_deleted', 'sso_required');
  return reasons;
}
