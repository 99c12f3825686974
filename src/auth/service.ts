import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { AppError, Conflict, NotFound, RateLimited, Unauthenticated, Unauthorized } from '../lib/errors';
import { metrics } from '../observability/metrics';
import { decoyPasswordHash, hashPassword, safeEqual, verifyPassword } from '../lib/crypto';
import { isUniqueViolation } from '../db/errors';
import { createOrganizationIn } from '../org/service';
import { toUser } from '../users/mappers';
import * as users from '../users/service';
import type { Origin } from '../users/service';
import * as limits from '../protection/rate-limit';
import { recordChange } from '../audit';
import { membershipsOfUser } from '../members/memberships';
import { checkNewPassword } from '../protection/passwords';
import { refusePasswordUnderSso, refuseSignUpUnderSso, refuseSwitchOutsideSso } from '../sso/enforcement';
import * as mfa from '../mfa/challenges';
import { openSession, openSignInSession, recordSignIn } from './sign-in';
import { queueVerification } from './verification';
import { provePassword } from './passwords';
import { userIdOf } from '../access/roles';

export async function bootstrapStatus(deps: AppDeps): Promise<boolean> {
  return (await users.countUsers(deps.db)) > 0;
}

export async function bootstrap(
  deps: AppDeps,
  input: { email: string; password: string; name: string; organizationName: string; token: string | undefined },
  origin: Origin,
) {
  await checkNewPassword(input.password, { email: input.email, name: input.name });
  await limits.consume(deps, 'bootstrapIp', origin.ip);
  const expected = deps.settings.bootstrapToken;
  if (expected && !(input.token && safeEqual(input.token, expected))) throw new Unauthorized('A valid x-bootstrap-token is required.');
  const passwordHash = await hashPassword(input.password, deps.settings.passwordHashCost);
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    await users.lockBootstrap(trx);
    if ((await users.countUsers(trx)) > 0) throw new Conflict('already_bootstrapped', 'The platform has already been bootstrapped.');
    // The operator vouches for the first account's address.
    const user = await users.createUser(trx, { email: input.email, name: input.name, passwordHash, isPlatformAdmin: true, emailVerified: true, now });
    const { organization, member } = await createOrganizationIn(trx, deps.audit, { name: input.organizationName, nameField: ['body', 'organizationName'], plan: 'enterprise', ownerUserId: user.id, now });
    const { activeOrganizationId: _active, ...session } = await openSession(deps, trx, user.id, origin, now);
    return { user: toUser(user), organization, member, session };
  });
}

export async function signUp(deps: AppDeps, input: { email: string; password: string; name: string }, origin: Origin) {
  // The limit first: the strength estimate is work a flood of sign-ups must not get for free.
  await limits.consume(deps, 'signUpIp', origin.ip);
  await checkNewPassword(input.password, { email: input.email, name: input.name });
  await refuseSignUpUnderSso(deps.db, input.email);
  const passwordHash = await hashPassword(input.password, deps.settings.passwordHashCost);
  const now = deps.clock.now();
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const user = await users.createUser(trx, { email: input.email, name: input.name, passwordHash, now });
      const { activeOrganizationId: _none, ...session } = await openSession(deps, trx, user.id, origin, now);
      // The address is proven by the link in this message (committed with the account, or neither).
      await queueVerification(deps, trx, user, now);
      return { user: toUser(user), session };
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new Conflict('email_taken', 'An account with this e-mail already exists.');
    throw err;
  }
}

/**
 * Same answer, and about the same time, whether the e-mail is unknown or the password wrong.
 * Failures are counted per e-mail and per IP (in Postgres, shared by every process); past the
 * limit even a right password gets 429 until the window ends, so guessing cannot go on.
 */
export async function signIn(deps: AppDeps, input: { email: string; password: string }, origin: Origin) {
  if (!metrics) return passwordSignIn(deps, input, origin);
  try {
    const result = await passwordSignIn(deps, input, origin);
    metrics.signIns.inc({ outcome: 'mfaRequired' in result ? 'mfa_required' : 'success' });
    return result;
  } catch (err) {
    if (err instanceof RateLimited) metrics.signIns.inc({ outcome: 'rate_limited' });
    else if (err instanceof AppError && err.status < 500) metrics.signIns.inc({ outcome: 'invalid' });
    throw err;
  }
}

async function passwordSignIn(deps: AppDeps, input: { email: string; password: string }, origin: Origin) {
  const { ip } = origin;
  const email = users.normalizeEmail(input.email);
  await limits.assertNotLimited(deps, 'signInEmail', email);
  await limits.assertNotLimited(deps, 'signInIp', ip);
  const user = await users.findCredentials(deps.db, input.email);
  const valid = await verifyPassword(user?.password_hash ?? (await decoyPasswordHash(deps.settings.passwordHashCost)), input.password);
  if (!user || !valid) {
    await limits.recordFailure(deps, 'signInEmail', email);
    await limits.recordFailure(deps, 'signInIp', ip);
    throw new Unauthenticated('invalid_credentials', 'The e-mail or password is incorrect.');
  }
  // Only after the password proved the user: a guesser learns nothing about enforcement.
  await refusePasswordUnderSso(deps.db, user);
  await limits.clear(deps, 'signInEmail', email);
  // A user who holds a second factor gets a challenge and no session (docs/second-factors.md#signing-in).
  const challenge = await mfa.challengeFor(deps, user.id, 'sign_in', null);
  if (challenge) return { mfaRequired: true as const, challenge };
  const now = deps.clock.now();
  const session = await deps.db.transaction().execute((trx) => openSignInSession(deps, trx, { userId: user.id, secondFactor: null }, origin, now));
  return { user: toUser(user), session };
}

/**
 * Proves the session's user again (fresh-session actions). Wrong passwords count against the
 * sign-in limits of the user's e-mail and of the IP, exactly as sign-in failures do.
 */
export async function reauthenticate(deps: AppDeps, principal: Principal, password: string, ip = ''): Promise<{ authenticatedAt: string } | { mfaRequired: true; challenge: mfa.Challenge }> {
  if (principal.kind !== 'session' || !principal.sessionId) throw new Unauthorized('This route needs a signed-in session.');
  // A user provisioned by SCIM has no password: they renew through SSO, never here.
  const user = await provePassword(deps, userIdOf(principal), password, ip, 'The password is incorrect.');
  // An SSO session renews by signing in through SSO again.
  await refusePasswordUnderSso(deps.db, user);
  await limits.clear(deps, 'signInEmail', users.normalizeEmail(user.email));
  // With a second factor the session is renewed only once the challenge is answered.
  const challenge = await mfa.challengeFor(deps, user.id, 'reauthenticate', principal.sessionId);
  if (challenge) return { mfaRequired: true, challenge };
  const now = deps.clock.now();
  await users.markAuthenticated(deps.db, principal.sessionId, now);
  return { authenticatedAt: now.toISOString() };
}

export async function signOut(deps: AppDeps, principal: Principal): Promise<void> {
  if (!principal.sessionId) throw new Unauthorized();
  const sessionId = principal.sessionId;
  await deps.db.transaction().execute(async (trx) => {
    await users.revokeSession(trx, sessionId, deps.clock.now());
    // Recorded in the organization the session was signed in to (none: no organization log).
    if (principal.membership) {
      await recordChange(trx, deps.audit, { action: 'member.signed_out', target: { type: 'member', id: principal.membership.memberId } });
    }
  });
}

export async function me(deps: AppDeps, principal: Principal) {
  const [user, memberships] = await Promise.all([users.findUser(deps.db, userIdOf(principal)), membershipsOfUser(deps.db, userIdOf(principal))]);
  if (!user) throw new Unauthorized();
  return {
    user: toUser(user),
    organizations: memberships.map((m) => ({ id: m.id, name: m.name, role: m.role })),
    activeOrganizationId: principal.membership?.organizationId ?? null,
  };
}

export async function setActiveOrganization(deps: AppDeps, principal: Principal, organizationId: string) {
  if (!principal.sessionId) throw new Unauthorized();
  const userId = userIdOf(principal);
  const memberships = await membershipsOfUser(deps.db, userId);
  if (!memberships.some((m) => m.id === organizationId)) {
    throw new NotFound('organization_not_found', 'You are not a member of that organization.');
  }
  await refuseSwitchOutsideSso(deps.db, organizationId, { ...principal, userId });
  const sessionId = principal.sessionId;
  await deps.db.transaction().execute(async (trx) => {
    await users.setSessionOrganization(trx, sessionId, organizationId);
    await recordSignIn(trx, deps.audit, userId, organizationId, 'switch');
  });
  return organizationId;
}
