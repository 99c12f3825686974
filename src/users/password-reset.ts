import type { Db } from '../db/schema';
import * as store from './store';
import { consumeAccountToken, endPendingAccountTokens, invalidToken, issueAccountToken, peekAccountToken } from './tokens';
import type { UserRow } from './store';

/*
 * A password reset's steps on the accounts' own tables (users, sessions, account_tokens), each one
 * call from src/auth (docs/accounts.md#password-reset-and-change): what the request leads to, the
 * account a link names, and the reset itself inside the caller's transaction.
 */

/** After a reset request: null (no account has the address), the account's address without a token (it has no password), or a new reset token. */
export async function issuePasswordReset(trx: Db, email: string, now: Date): Promise<{ to: string; token: string | null } | null> {
  const user = await store.findCredentials(trx, email);
  if (!user) return null;
  if (!user.password_hash) return { to: user.email, token: null };
  return { to: user.email, token: await issueAccountToken(trx, { userId: user.id, purpose: 'password_reset', now }) };
}

/** The account a pending reset link names, without using the link (400 `invalid_token` when there is none). */
export async function accountOfResetLink(db: Db, token: string, now: Date): Promise<UserRow> {
  const pending = await peekAccountToken(db, 'password_reset', token, now);
  const account = pending ? await store.findUserById(db, pending.userId) : undefined;
  if (!account) throw invalidToken();
  return account;
}

/**
 * The reset, in the caller's transaction: the link used (400 `invalid_token` when it no longer
 * is), the new password set, the address marked proven, every session and every other reset link
 * of the user ended. `verified`: the address was unproven until now.
 */
export async function resetPassword(trx: Db, input: { token: string; passwordHash: string; usedAt: Date; now: Date }): Promise<{ user: UserRow; verified: boolean; sessionsRevoked: number }> {
  const { now } = input;
  const used = await consumeAccountToken(trx, 'password_reset', input.token, input.usedAt);
  if (!used) throw invalidToken();
  const user = await store.lockUser(trx, used.userId);
  if (!user) throw invalidToken();
  await store.setPasswordHash(trx, user.id, input.passwordHash, now);
  const verified = await store.markEmailVerified(trx, user.id, now);
  const sessionsRevoked = await store.revokeSessionsOfUser(trx, user.id, null, now);
  await endPendingAccountTokens(trx, user.id, 'password_reset', now);
  return { user, verified, sessionsRevoked };
}
