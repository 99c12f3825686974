import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { RateLimited, Unauthenticated, Unauthorized } from '../lib/errors';
import { hashPassword, verifyPassword } from '../lib/crypto';
import { queueMail, queueNotice } from '../mail/queue';
import * as limits from '../protection/rate-limit';
import { checkNewPassword } from '../protection/passwords';
import { recordAccountChange } from '../account/audit';
import { endUntrustedCredentials } from '../account/takeover';
import * as users from '../users/service';
import { userIdOf } from '../access/roles';

/**
 * Password reset and change (docs/accounts.md#password-reset-and-change). Second factors stay as they are: a reset
 * proves the mailbox, not the authenticator, so a user with one still answers its challenge.
 */

/**
 * POST /v1/auth/password-reset: the same answer, after the same work, whatever the address. The
 * limits (per address and per IP) are counted, then the reply goes out; looking the address up and
 * queueing its message (a reset link, or how an account without a password signs in) happens after
 * it, so nothing the caller can time depends on whether the account exists. The token and its
 * message commit together; should the process stop before that, the person asks again.
 */
export async function requestPasswordReset(deps: AppDeps, email: string, ip: string): Promise<void> {
  await limits.consumeInOrder(deps, [
    ['passwordResetEmail', users.normalizeEmail(email)],
    ['passwordResetIp', ip],
  ]);
  const now = deps.clock.now();
  // A few milliseconds later, so the reply has left before any of the work runs (on the embedded
  // database a query runs on this thread and would otherwise hold back the reply's delivery).
  const work = new Promise<void>((resolve) => setTimeout(resolve, AFTER_REPLY_MS))
    .then(() => sendResetMessage(deps, email, now))
    // Past the address's mail budget (src/mail/budget.ts) the reply was the same; nothing is sent.
    .catch((err: unknown) => (err instanceof RateLimited ? deps.logger.info('password reset message not queued: the address has had its share of mail this hour') : deps.logger.error({ err }, 'password reset message not queued')))
    .finally(() => inFlight.delete(work));
  inFlight.add(work);
}

const AFTER_REPLY_MS = 10;

/** Reset work that follows replies and has not finished yet. */
const inFlight = new Set<Promise<void>>();

/** Resolves once the reset work started so far has finished (tests; a graceful stop). */
export async function settleResetWork(): Promise<void> {
  while (inFlight.size > 0) await Promise.all([...inFlight]);
}

async function sendResetMessage(deps: AppDeps, email: string, now: Date): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    // One call to the accounts' owner: the account, and its reset token when it has a password.
    const reset = await users.issuePasswordReset(trx, email, now);
    if (!reset) return;
    await queueMail(trx, deps, reset.token === null ? { kind: 'password_reset_unavailable', to: reset.to } : { kind: 'password_reset', to: reset.to, token: reset.token });
  });
}

/**
 * POST /v1/auth/password-reset/confirm: the link's token sets a new password, proves the address,
 * ends every session and every other reset link of the user, and sends a notice. When the address
 * was unproven, every credential the account made ends too (src/account/takeover.ts).
 */
export async function confirmPasswordReset(deps: AppDeps, input: { token: string; password: string }): Promise<void> {
  const now = deps.clock.now();
  // The password is checked and hashed before the token is used: a refused password leaves the link working.
  const account = await users.accountOfResetLink(deps.db, input.token, now);
  await checkNewPassword(input.password, { email: account.email, name: account.name });
  const passwordHash = await hashPassword(input.password, deps.settings.passwordHashCost);
  await deps.db.transaction().execute(async (trx) => {
    const { user, verified, sessionsRevoked } = await users.resetPassword(trx, { token: input.token, passwordHash, usedAt: deps.clock.now(), now });
    // A reset link is the first proof of an unverified address (EMAIL_VERIFICATION=optional lets
    // such an account make credentials): whatever it made before is untrusted and ends here.
    const ended = verified ? await endUntrustedCredentials(trx, deps, user.id) : null;
    await queueNotice(trx, deps, { kind: 'password_changed', to: user.email });
    await recordAccountChange(trx, deps.audit, user.id, 'member.password_reset', {
      sessionsRevoked,
      ...(verified ? { emailVerified: { from: false, to: true } } : {}),
      ...(ended ?? {}),
    });
  });
}

/**
 * The signed-in user proves their password again (password change, fresh-session renewal). Wrong
 * ones count against the sign-in limits of the user's e-mail and of the IP, as sign-in failures
 * do; a user without a password (provisioned by SCIM or SSO) cannot prove one. Clearing the
 * e-mail's failures is left to the caller, after its own further checks.
 */
export async function provePassword(deps: AppDeps, userId: string, password: string, ip: string, wrong: string) {
  const user = await users.findUser(deps.db, userId);
  if (!user) throw new Unauthorized();
  const email = users.normalizeEmail(user.email);
  await limits.assertNotLimited(deps, 'signInEmail', email);
  await limits.assertNotLimited(deps, 'signInIp', ip);
  const credentials = await users.findCredentials(deps.db, user.email);
  if (!credentials?.password_hash || !(await verifyPassword(credentials.password_hash, password))) {
    await limits.recordFailure(deps, 'signInEmail', email);
    await limits.recordFailure(deps, 'signInIp', ip);
    throw new Unauthenticated('invalid_credentials', wrong);
  }
  return user;
}

/**
 * POST /v1/me/password (session only, fresh): the current password proves the user again (wrong
 * ones count against the sign-in limits); every other session ends, and a notice is sent.
 */
export async function changePassword(deps: AppDeps, principal: Principal, input: { currentPassword: string; newPassword: string }, ip: string): Promise<void> {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  const user = await provePassword(deps, userIdOf(principal), input.currentPassword, ip, 'The current password is incorrect.');
  await limits.clear(deps, 'signInEmail', users.normalizeEmail(user.email));
  await checkNewPassword(input.newPassword, { email: user.email, field: ['body', 'newPassword'] });
  const passwordHash = await hashPassword(input.newPassword, deps.settings.passwordHashCost);
  const now = deps.clock.now();
  const sessionId = principal.sessionId;
  await deps.db.transaction().execute(async (trx) => {
    await users.setPasswordHash(trx, user.id, passwordHash, now);
    const sessionsRevoked = await users.revokeSessionsOfUser(trx, user.id, sessionId, now);
    await users.endPendingAccountTokens(trx, user.id, 'password_reset', now);
    await queueNotice(trx, deps, { kind: 'password_changed', to: user.email });
    await recordAccountChange(trx, deps.audit, user.id, 'member.password_changed', { sessionsRevoked });
  });
}
