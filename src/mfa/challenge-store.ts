import { sql } from 'kysely';
import type { Db } from '../db/schema';
import type { UserRow } from '../users/service';

/** SQL of the sign-in challenges (mfa_challenges): finding, answering, failing and using one. Created with the user's factors in ./store.ts (factorsWithChallenge). */

/** A live challenge (not used, not expired, fewer than `maxFailures` wrong answers). */
export async function findLiveChallenge(db: Db, tokenHash: string, now: Date, maxFailures: number) {
  return db
    .selectFrom('mfa_challenges')
    .select(['id', 'user_id', 'purpose', 'session_id', 'webauthn_challenge', 'failures', 'expires_at'])
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where('failures', '<', maxFailures)
    .executeTakeFirst();
}

/**
 * A live challenge with what answering it needs, in one statement: its user's row (read in a join;
 * src/users owns and writes it; null once the user is gone) and the user's TOTP factor (null
 * without one).
 */
export async function findChallengeToAnswer(db: Db, tokenHash: string, now: Date, maxFailures: number) {
  const row = await db
    .selectFrom('mfa_challenges as c')
    .leftJoin('users as u', 'u.id', 'c.user_id')
    .leftJoin('user_totp as t', 't.user_id', 'c.user_id')
    .select([
      'c.id',
      'c.user_id',
      'c.purpose',
      'c.session_id',
      'c.webauthn_challenge',
      'u.email',
      'u.name',
      'u.image',
      'u.email_verified_at',
      'u.created_at',
      't.secret_sealed',
      't.confirmed_at',
      't.last_used_step',
    ])
    .where('c.token_hash', '=', tokenHash)
    .where('c.used_at', 'is', null)
    .where('c.expires_at', '>', now)
    .where('c.failures', '<', maxFailures)
    .executeTakeFirst();
  if (!row) return undefined;
  // Deleting a user deletes their challenges, so the row is there; a missing one stays 401 (verify).
  const user: UserRow | null =
    row.email === null || row.created_at === null
      ? null
      : { id: row.user_id, email: row.email, name: row.name, image: row.image, email_verified_at: row.email_verified_at, created_at: row.created_at };
  return {
    challenge: { id: row.id, purpose: row.purpose, session_id: row.session_id, webauthn_challenge: row.webauthn_challenge },
    user,
    totp: row.secret_sealed === null ? null : { secret_sealed: row.secret_sealed, confirmed_at: row.confirmed_at, last_used_step: row.last_used_step },
  };
}

/**
 * The TOTP step and the challenge spent in one statement: the step only if it is after the last
 * accepted one (as useTotpStep), the challenge only if the step was spent and nobody used it
 * first. Of concurrent answers, one spends each.
 */
export async function useTotpStepAndChallenge(db: Db, userId: string, step: number, challengeId: string, now: Date): Promise<{ step: boolean; challenge: boolean }> {
  const result = await sql<{ step: boolean; challenge: boolean }>`
    WITH step AS (
      UPDATE user_totp SET last_used_step = ${String(step)}::bigint
      WHERE user_id = ${userId} AND confirmed_at IS NOT NULL AND (last_used_step IS NULL OR last_used_step < ${String(step)}::bigint)
      RETURNING user_id
    ),
    challenge AS (
      UPDATE mfa_challenges SET used_at = ${now}::timestamptz
      WHERE id = ${challengeId} AND used_at IS NULL AND EXISTS (SELECT 1 FROM step)
      RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM step) AS step, EXISTS (SELECT 1 FROM challenge) AS challenge`.execute(db);
  return result.rows[0]!;
}

export async function setChallengeWebauthn(db: Db, id: string, challenge: string): Promise<void> {
  await db.updateTable('mfa_challenges').set({ webauthn_challenge: challenge }).where('id', '=', id).execute();
}

/** Counts a wrong answer; returns the failures so far. */
export async function failChallenge(db: Db, id: string): Promise<number> {
  const row = await db
    .updateTable('mfa_challenges')
    .set((eb) => ({ failures: eb('failures', '+', 1) }))
    .where('id', '=', id)
    .returning('failures')
    .executeTakeFirstOrThrow();
  return row.failures;
}

/** Marks the challenge used; false when another request used it first. */
export async function useChallenge(db: Db, id: string, now: Date): Promise<boolean> {
  const row = await db.updateTable('mfa_challenges').set({ used_at: now }).where('id', '=', id).where('used_at', 'is', null).returning('id').executeTakeFirst();
  return row !== undefined;
}
