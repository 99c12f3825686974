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

/**
 * E-mail verification (docs/accounts.md#sign-up-and-e-mail-verification): sign-up queues a message whose link carries a
 * `verify_email` token (24 hours, once); opening it proves the address. A user may ask for a new
 * message (one a minute, five an hour).
 */

/** Issues a verification token and queues its message, inside the caller's transaction. */
export async function queueVerification(deps: AppDeps, trx: Transaction<DB>, user: Pick<UserRow, 'id' | 'email' | 'name'>, now: Date): Promise<void> {
  const token = await users.issueAccountToken(trx, { userId: user.id, purpose: 'verify_email', now });
  await queueMail(trx, deps, { kind: 'verify_email', to: user.email, name: user.name, token });
}

/** POST /v1/auth/verify-email: the token proves the address of the account it was sent to. */
export async function verifyEmail(deps: AppDeps, token: string) {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const used = await users.consumeAccountToken(trx, 'verify_email', token, now);
    if (!used) throw users.invalidToken();
    if (await users.markEmailVerified(trx, used.userId, now)) {
      await recordAccountChange(trx, deps.audit, used.userId, 'member.email_verified', { emailVerified: { from: false, to: true } });
    }
    const user = await users.findUser(trx, used.userId);
    if (!user) throw users.invalidToken();
    return { user: toUser(user) };
  });
}

/** POST /v1/auth/verify-email/resend (session only): a new message, within the user's limits. */
export async function resendVerification(deps: AppDeps, principal: Principal): Promise<void> {
  if (principal.kind !== 'session' || !principal.sessionId) throw new Unauthorized('This route needs a signed-in session.');
  const user = await users.findUser(deps.db, principal.userId);
  if (!user) throw new Unauthorized();
  if (user.email_verified_at) throw new Conflict('already_verified', 'The e-mail address is already verified.');
  await limits.consume(deps, 'verifyResendUserMinute', user.id);
  await limits.consume(deps, 'verifyResendUserHour', user.id);
  const now = deps.clock.now();
  await deps.db.transaction().execute((trx) => queueVerification(deps, trx, user, now));
}
