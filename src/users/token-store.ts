import type { ExpressionBuilder } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { AccountTokensTable } from './tables';

/** The `account_tokens` table: written here only (./tokens.ts is its service). */
export type TokenPurpose = AccountTokensTable['purpose'];

export interface ConsumedToken {
  id: string;
  userId: string;
  newEmail: string | null;
}

export async function insertToken(
  db: Db,
  token: { id: string; userId: string; purpose: TokenPurpose; tokenHash: string; newEmail: string | null; now: Date; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('account_tokens')
    .values({
      id: token.id,
      user_id: token.userId,
      purpose: token.purpose,
      token_hash: token.tokenHash,
      new_email: token.newEmail,
      created_at: token.now,
      expires_at: token.expiresAt,
      used_at: null,
    })
    .execute();
}

/** The token of this hash and purpose, while it is unused and unexpired. */
function pending(eb: ExpressionBuilder<DB, 'account_tokens'>, purpose: TokenPurpose, tokenHash: string, now: Date) {
  return eb.and([eb('token_hash', '=', tokenHash), eb('purpose', '=', purpose), eb('used_at', 'is', null), eb('expires_at', '>', now)]);
}

/** Marks the token used if it is pending, of this purpose and unexpired, in one statement (so it is used once). */
export async function useToken(db: Db, purpose: TokenPurpose, tokenHash: string, now: Date): Promise<ConsumedToken | null> {
  const row = await db
    .updateTable('account_tokens')
    .set({ used_at: now })
    .where((eb) => pending(eb, purpose, tokenHash, now))
    .returning(['id', 'user_id', 'new_email'])
    .executeTakeFirst();
  return row ? { id: row.id, userId: row.user_id, newEmail: row.new_email } : null;
}

/** Ends the user's pending tokens (of one purpose, or all); returns how many. */
export async function endPendingTokens(db: Db, userId: string, purpose: TokenPurpose | null, now: Date): Promise<number> {
  let query = db.updateTable('account_tokens').set({ used_at: now }).where('user_id', '=', userId).where('used_at', 'is', null);
  if (purpose) query = query.where('purpose', '=', purpose);
  return (await query.returning('id').execute()).length;
}

export async function findPendingToken(db: Db, purpose: TokenPurpose, tokenHash: string, now: Date): Promise<{ userId: string; newEmail: string | null } | null> {
  const row = await db
    .selectFrom('account_tokens')
    .select(['user_id', 'new_email'])
    .where((eb) => pending(eb, purpose, tokenHash, now))
    .executeTakeFirst();
  return row ? { userId: row.user_id, newEmail: row.new_email } : null;
}
