import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { Conflict, Forbidden, Invalid, Unauthorized } from '../lib/errors';
import { isUniqueViolation } from '../db/errors';
import { queueMail } from '../mail/queue';
import * as limits from '../protection/rate-limit';
import { refuseSignUpUnderSso } from '../sso/enforcement';
import { toUser } from '../users/mappers';
import * as users from '../users/service';
import { recordAccountChange } from './audit';
import { addressManagedByIdentityProvider } from './store';
import { userIdOf } from '../access/roles';

/**
 * Changing the account's e-mail address (docs/accounts.md#the-callers-own-account): asked for with a fresh session,
 * applied by the link mailed to the new address, so the address is proven when it changes. The
 * old address is told at once, so a change its owner did not ask for is seen. Whether the new
 * address has an account is never in the answer: its owner gets a notice instead of a link.
 */
const emailTaken = () => new Conflict('email_taken', 'An account with this e-mail already exists.');

async function refuseManaged(db: AppDeps['db'], userId: string): Promise<void> {
  if (await addressManagedByIdentityProvider(db, userId)) {
    throw new Forbidden(
      'email_managed_by_identity_provider',
      "Your e-mail address comes from your organization's identity provider (SSO or SCIM): change it there, and it follows here.",
    );
  }
}

export async function requestEmailChange(deps: AppDeps, principal: Principal, email: string): Promise<void> {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  const user = await users.findUser(deps.db, userIdOf(principal));
  if (!user) throw new Unauthorized();
  const newEmail = email.trim();
  if (users.normalizeEmail(newEmail) === users.normalizeEmail(user.email)) throw Invalid.at(['body', 'email'], 'email is already your address');
  await refuseManaged(deps.db, user.id);
  // An address of a domain whose organization enforces SSO gets its account from SSO, as at sign-up.
  await refuseSignUpUnderSso(deps.db, newEmail);
  // Each request mails an address of the caller's choosing: a few an hour, spent before the
  // address is looked up so the answer cannot be used to probe addresses faster than that.
  await limits.consume(deps, 'emailChangeUser', user.id);
  const now = deps.clock.now();
  if (await users.findUserByEmail(deps.db, newEmail)) {
    // A taken address gets the same answer as a free one (else this is a lookup of who has an
    // account): its owner is told instead, and the caller's old address gets the usual notice.
    await deps.db.transaction().execute(async (trx) => {
      // Spent against the address's budget as the link would be (the same 429 past it).
      await queueMail(trx, deps, { kind: 'email_change_taken', to: newEmail });
      await queueMail(trx, deps, { kind: 'email_change_notice', to: user.email, newEmail });
    });
    return;
  }
  await deps.db.transaction().execute(async (trx) => {
    // Only the latest request's link works.
    await users.endPendingAccountTokens(trx, user.id, 'email_change', now);
    const token = await users.issueAccountToken(trx, { userId: user.id, purpose: 'email_change', newEmail, now });
    await queueMail(trx, deps, { kind: 'email_change_confirm', to: newEmail, token, newEmail });
    await queueMail(trx, deps, { kind: 'email_change_notice', to: user.email, newEmail });
  });
}

export async function confirmEmailChange(deps: AppDeps, token: string) {
  const now = deps.clock.now();
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const used = await users.consumeAccountToken(trx, 'email_change', token, now);
      if (!used?.newEmail) throw users.invalidToken();
      const before = await users.findUser(trx, used.userId);
      if (!before) throw users.invalidToken();
      await refuseManaged(trx, before.id);
      const holder = await users.findUserByEmail(trx, used.newEmail);
      if (holder && holder.id !== before.id) throw emailTaken();
      const after = await users.setProvenEmail(trx, before.id, used.newEmail, now);
      if (!after) throw users.invalidToken();
      // Links still pending went to the old address: they end with it.
      await users.endPendingAccountTokens(trx, before.id, null, now);
      await recordAccountChange(trx, deps.audit, before.id, 'member.email_changed', { email: { from: before.email, to: after.email } });
      return toUser(after);
    });
  } catch (err) {
    // Another account took the address between the check and the update.
    if (isUniqueViolation(err)) throw emailTaken();
    throw err;
  }
}
