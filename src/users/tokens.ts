import type { Db } from '../db/schema';
import { randomSecret, sha256Hex } from '../lib/crypto';
import { newId } from '../lib/ids';
import { CodedError } from '../lib/errors';
import * as store from './token-store';
import type { ConsumedToken, TokenPurpose } from './token-store';

/**
 * Link tokens (docs/accounts.md#link-tokens): what a message's link carries to prove that its reader holds
 * the mailbox. 256 random bits (`cpa_` + 43 characters), only the SHA-256 stored, used once,
 * bound to one purpose (a reset token is not a verification token), with the purpose's lifetime.
 * An e-mail change token carries the address it confirms. Invitation tokens belong to
 * src/invitations (they prove a mailbox before any account exists).
 */
export type { ConsumedToken, TokenPurpose } from './token-store';

const TOKEN_PREFIX = 'cpa';

export const TOKEN_LIFETIME_MS: Readonly<Record<TokenPurpose, number>> = {
  verify_email: 24 * 60 * 60_000,
  password_reset: 30 * 60_000,
  email_change: 60 * 60_000,
};

export type IssueInput =
  | { userId: string; purpose: 'verify_email' | 'password_reset'; now: Date }
  | { userId: string; purpose: 'email_change'; newEmail: string; now: Date };

/** A new token for the user (inside the transaction that queues the message carrying it); returns it raw. */
export async function issueAccountToken(trx: Db, input: IssueInput): Promise<string> {
  const token = randomSecret(TOKEN_PREFIX);
  await store.insertToken(trx, {
    id: newId('accountToken'),
    userId: input.userId,
    purpose: input.purpose,
    tokenHash: sha256Hex(token),
    newEmail: input.purpose === 'email_change' ? input.newEmail.trim() : null,
    now: input.now,
    expiresAt: new Date(input.now.getTime() + TOKEN_LIFETIME_MS[input.purpose]),
  });
  return token;
}

/**
 * Uses the token: its row when it is pending, of this purpose and unexpired, else null — one
 * answer for unknown, used, expired and wrong-purpose tokens (callers answer 400 `invalid_token`).
 * The use commits or rolls back with the caller's transaction.
 */
export async function consumeAccountToken(trx: Db, purpose: TokenPurpose, raw: string, now: Date): Promise<ConsumedToken | null> {
  if (!raw.startsWith(`${TOKEN_PREFIX}_`)) return null;
  return store.useToken(trx, purpose, sha256Hex(raw), now);
}

/** Ends the user's pending tokens of a purpose (null: every purpose), e.g. reset links after a reset. */
export async function endPendingAccountTokens(trx: Db, userId: string, purpose: TokenPurpose | null, now: Date): Promise<number> {
  return store.endPendingTokens(trx, userId, purpose, now);
}

/** The one answer for a link token that is unknown, used, expired or of another purpose. */
export function invalidToken(): CodedError {
  return new CodedError(400, 'invalid_token', 'This link is invalid, already used or expired. Ask for a new one.');
}

/** Whether the token would be accepted now, without using it (checks that must run before the change). */
export async function peekAccountToken(db: Db, purpose: TokenPurpose, raw: string, now: Date): Promise<{ userId: string; newEmail: string | null } | null> {
  if (!raw.startsWith(`${TOKEN_PREFIX}_`)) return null;
  return store.findPendingToken(db, purpose, sha256Hex(raw), now);
}
