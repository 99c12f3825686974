import { sql } from 'kysely';
import type { Db } from '../db/schema';

/** SQL of src/mfa's tables only; every function takes the user (or organization) it is about. */

export async function findTotp(db: Db, userId: string) {
  return db
    .selectFrom('user_totp')
    .select(['secret_sealed', 'confirmed_at', 'last_used_step'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

/** A new, unconfirmed secret (replacing an unconfirmed one); a confirmed one stays as it is. */
export async function putPendingTotp(db: Db, userId: string, secretSealed: string, now: Date): Promise<boolean> {
  const row = await db
    .insertInto('user_totp')
    .values({ user_id: userId, secret_sealed: secretSealed, created_at: now })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ secret_sealed: secretSealed, created_at: now, last_used_step: null }).where('user_totp.confirmed_at', 'is', null))
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Records the accepted step only if it is after the last one: of two concurrent uses of one code,
 * exactly one updates the row. Confirms a pending secret on its first code.
 */
export async function useTotpStep(db: Db, userId: string, step: number, now: Date, confirm: boolean): Promise<boolean> {
  const row = await db
    .updateTable('user_totp')
    .set({ last_used_step: String(step), ...(confirm ? { confirmed_at: now } : {}) })
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', String(step))]))
    .where('confirmed_at', confirm ? 'is' : 'is not', null)
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function deleteTotp(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('user_totp').where('user_id', '=', userId).execute();
}

export async function replaceRecoveryCodes(db: Db, userId: string, hashes: string[], now: Date): Promise<void> {
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
  if (hashes.length > 0) {
    await db
      .insertInto('user_recovery_codes')
      .values(hashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now })))
      .execute();
  }
}

/** Spends a code: true once, for an unused code of this user. */
export async function useRecoveryCode(db: Db, userId: string, hash: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('user_recovery_codes')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('code_hash', '=', hash)
    .where('used_at', 'is', null)
    .returning('user_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function unusedRecoveryCodeCount(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('user_recovery_codes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface PasskeyRow {
  id: string;
  name: string;
  credential_id: string;
  public_key: string;
  counter: string;
  transports: string[];
  created_at: Date;
  last_used_at: Date | null;
}

const PASSKEY_COLUMNS = ['id', 'name', 'credential_id', 'public_key', 'counter', 'transports', 'created_at', 'last_used_at'] as const;

export async function listPasskeys(db: Db, userId: string): Promise<PasskeyRow[]> {
  return db.selectFrom('passkeys').select(PASSKEY_COLUMNS).where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute();
}

export async function insertPasskey(
  db: Db,
  row: { id: string; userId: string; name: string; credentialId: string; publicKey: string; counter: number; transports: string[]; now: Date },
): Promise<PasskeyRow> {
  return db
    .insertInto('passkeys')
    .values({
      id: row.id,
      user_id: row.userId,
      name: row.name,
      credential_id: row.credentialId,
      public_key: row.publicKey,
      counter: String(row.counter),
      transports: row.transports,
      created_at: row.now,
    })
    .returning(PASSKEY_COLUMNS)
    .executeTakeFirstOrThrow();
}

/**
 * Moves the counter forward only from the value the assertion was checked against, so two
 * concurrent assertions of one counter value cannot both pass (a clone racing the original).
 */
export async function advancePasskey(db: Db, userId: string, id: string, from: string, to: number, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('passkeys')
    .set({ counter: String(to), last_used_at: now })
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .where('counter', '=', from)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function deletePasskey(db: Db, userId: string, id: string): Promise<boolean> {
  const row = await db.deleteFrom('passkeys').where('user_id', '=', userId).where('id', '=', id).returning('id').executeTakeFirst();
  return row !== undefined;
}

export async function putRegistrationChallenge(db: Db, userId: string, challenge: string, expiresAt: Date): Promise<void> {
  await db
    .insertInto('webauthn_registrations')
    .values({ user_id: userId, challenge, expires_at: expiresAt })
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ challenge, expires_at: expiresAt }))
    .execute();
}

/** The pending registration challenge, consumed (one response per options call). */
export async function takeRegistrationChallenge(db: Db, userId: string, now: Date): Promise<string | null> {
  const row = await db
    .deleteFrom('webauthn_registrations')
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .returning('challenge')
    .executeTakeFirst();
  return row?.challenge ?? null;
}

export interface Factors {
  totp: boolean;
  passkeys: number;
  recoveryCodes: number;
}

function factorsSql(userId: string) {
  return sql`SELECT EXISTS (SELECT 1 FROM user_totp WHERE user_id = ${userId} AND confirmed_at IS NOT NULL) AS totp,
           (SELECT count(*) FROM passkeys WHERE user_id = ${userId}) AS passkeys,
           (SELECT count(*) FROM user_recovery_codes WHERE user_id = ${userId} AND used_at IS NULL) AS recovery_codes`;
}

type FactorsRow = { totp: boolean; passkeys: string; recovery_codes: string };

function toFactors(r: FactorsRow): Factors {
  return { totp: r.totp, passkeys: Number(r.passkeys), recoveryCodes: Number(r.recovery_codes) };
}

/** Which factors a user holds: a confirmed TOTP secret, passkeys, unused recovery codes. */
export async function factorsOf(db: Db, userId: string): Promise<Factors> {
  const row = await sql<FactorsRow>`${factorsSql(userId)}`.execute(db);
  return toFactors(row.rows[0]!);
}

/**
 * The user's factors, and in the same statement a new challenge when they hold a second factor
 * (a confirmed TOTP secret or a passkey; recovery codes back one up and do not count alone).
 */
export async function factorsWithChallenge(
  db: Db,
  row: { id: string; userId: string; tokenHash: string; purpose: 'sign_in' | 'reauthenticate'; sessionId: string | null; now: Date; expiresAt: Date },
): Promise<Factors> {
  const result = await sql<FactorsRow>`
    WITH f AS (${factorsSql(row.userId)}),
    challenge AS (
      INSERT INTO mfa_challenges (id, user_id, token_hash, purpose, session_id, created_at, expires_at)
      SELECT ${row.id}::text, ${row.userId}::text, ${row.tokenHash}::text, ${row.purpose}::text, ${row.sessionId}::text, ${row.now}::timestamptz, ${row.expiresAt}::timestamptz
      FROM f WHERE f.totp OR f.passkeys > 0
    )
    SELECT totp, passkeys, recovery_codes FROM f`.execute(db);
  return toFactors(result.rows[0]!);
}

export async function findPolicy(db: Db, organizationId: string): Promise<{ requireMfa: boolean; updatedAt: Date | null }> {
  const row = await db.selectFrom('organization_auth_policies').select(['require_mfa', 'updated_at']).where('organization_id', '=', organizationId).executeTakeFirst();
  return { requireMfa: row?.require_mfa ?? false, updatedAt: row?.updated_at ?? null };
}

export async function putPolicy(db: Db, organizationId: string, requireMfa: boolean, now: Date): Promise<void> {
  await db
    .insertInto('organization_auth_policies')
    .values({ organization_id: organizationId, require_mfa: requireMfa, updated_at: now })
    .onConflict((oc) => oc.column('organization_id').doUpdateSet({ require_mfa: requireMfa, updated_at: now }))
    .execute();
}
