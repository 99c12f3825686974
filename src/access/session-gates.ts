import type { AnyPrincipal } from '../domain/principal';
import { Forbidden } from '../lib/errors';

/**
 * What a session may reach while its organization requires something of it that it lacks. Under
 * `requireMfa` (accounts-and-email §8) a session with no second factor keeps the account's own
 * routes (`/v1/me…`: profile, enrolment, organization switching) and `/v1/auth/…` (sign-out,
 * reauthentication, the second step) and nothing else, so its user can enrol and carry on.
 * The router asks this once per request, before the handler, with the operation's path template.
 */
export function assertSessionGates(principal: AnyPrincipal | null, pathTemplate: string): void {
  if (!principal || principal.kind !== 'session' || !principal.mfaMissing) return;
  if (pathTemplate === '/v1/me' || pathTemplate.startsWith('/v1/me/') || pathTemplate.startsWith('/v1/auth/')) return;
  throw new Forbidden(
    'mfa_enrollment_required',
    'This organization requires a second factor: enrol one (POST /v1/me/mfa/totp or POST /v1/me/passkeys/options), or sign in again with it.',
  );
}
