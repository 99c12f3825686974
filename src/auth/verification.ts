import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { Conflict, Unauthorized } from '../lib/errors';
import { queueMail } from '../mail/queue';
import * as limits from '../protection/rate-limit';
import { toUser } from '../users/mappers';
import * as users from '../users/service';
import type { UserRow } from '../users/service';
import { recordAccountChange } from '../account/audit';
import { takeOverUnverifiedAccount } from '../account/takeover';
import { userIdOf } from '../access/roles';

/**
 * E-mail verification (docs/accounts.md#sign-up-and-e-mail-verification): sign-up queues a message whose link carries a
 * `verify_email` token (24 hours, once); opening it proves the address. A user may ask for a new
 * message (one a minute, five an hour).
 */

/** Issues a verification token and queues its message, inside the caller's transaction. */
export async function queueVerification(deps: AppDeps, trx: Transaction<DB>, user: Pick<UserRow, 'id' | 'email' | 'name'>, now: Date): Promise<void> {
  const token = await users.issueAccountToken(trx, { userId: user.id, purpose: 'verify_email', now });
  await queueMail(trx, deps, { kind: 'verify_email', to: user.email, token });
}

export interface Verification {
  user: ReturnType<typeof toUser>;
  /** The confirmation came from outside the account's sessions and removed the account's password. */
  passwordResetRequired: boolean;
  /** With `resetLink: 'caller'`: the token of the link to choose a password (else it was mailed). */
  passwordResetToken: string | null;
}

/**
 * POST /v1/auth/verify-email (docs/people-and-roles.md, "Proving an address"): the token proves
 * the mailbox of the account it was sent to, and nothing about the password someone chose at
 * sign-up. Confirmed with a session of that account (`sessionUserId`: the client that signed up,
 * or one signed in with its password since), one client holds both, and the account is verified
 * as it is. Confirmed from anywhere else — a browser that opened the link, another account's
 * session — it may be the address's owner confirming an account someone else made with it (account
 * pre-hijacking by one click), so the account is taken over as an identity provider's first
 * sign-in takes it over (src/users/takeover.ts: password removed, every session, API key and link
 * ended, `member.account_secured`), and a link to choose a password is issued: mailed to the
 * proven address (`resetLink: 'mail'`), or returned for a page that shows the form at once.
 */
export async function verifyEmail(deps: AppDeps, token: string, options: { sessionUserId: string | null; resetLink: 'mail' | 'caller' }): Promise<Verification> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const used = await users.consumeAccountToken(trx, 'verify_email', token, now);
    if (!used) throw users.invalidToken();
    let passwordResetToken: string | null = null;
    let passwordResetRequired = false;
    if (used.userId === options.sessionUserId) {
      if (await users.markEmailVerified(trx, used.userId, now)) {
        await recordAccountChange(trx, deps.audit, used.userId, 'member.email_verified', { emailVerified: { from: false, to: true } });
      }
    } else if ((await takeOverUnverifiedAccount(trx, deps, used.userId, 'verification'))?.passwordRemoved) {
      passwordResetRequired = true;
      passwordResetToken = await users.issueAccountToken(trx, { userId: used.userId, purpose: 'password_reset', now });
    }
    const user = await users.findUser(trx, used.userId);
    if (!user) throw users.invalidToken();
    if (passwordResetToken && options.resetLink === 'mail') {
      await queueMail(trx, deps, { kind: 'password_reset', to: user.email, token: passwordResetToken, confirmedElsewhere: true });
      passwordResetToken = null;
    }
    return { user: toUser(user), passwordResetRequired, passwordResetToken };
  });
}

/** POST /v1/auth/verify-email/resend (session only): a new message, within the user's limits. */
export async function resendVerification(deps: AppDeps, principal: Principal): Promise<void> {
  if (principal.kind !== 'session' || !principal.sessionId) throw new Unauthorized('This route needs a signed-in session.');
  const user = await users.findUser(deps.db, userIdOf(principal));
  if (!user) throw new Unauthorized();
  if (user.email_verified_at) throw new Conflict('already_verified', 'The e-mail address is already verified.');
  await limits.consume(deps, 'verifyResendUserMinute', user.id);
  await limits.consume(deps, 'verifyResendUserHour', user.id);
  const now = deps.clock.now();
  await deps.db.transaction().execute((trx) => queueVerification(deps, trx, user, now));
}
