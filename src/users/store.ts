import { sql, type Transaction } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { SessionAuthMethod } from '../domain/principal';
import { normalizeEmail } from '../lib/email';
import { plainName } from '../lib/names';

/** The `users` and `sessions` tables: written here only (other areas call ./service.ts). */

export interface UserRow {
  id: string;
  email: string;
  name: string | null;
  image: string | null;
  email_verified_at: Date | null;
  created_at: Date;
}

export const USER_COLUMNS = ['id', 'email', 'name', 'image', 'email_verified_at', 'created_at'] as const;

export async function countUsers(db: Db): Promise<number> {
  const row = await db.selectFrom('users').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
  return row.n;
}

/** Serializes bootstraps: the second waits for the first, then sees a user and refuses. */
export async function lockBootstrap(trx: Transaction<DB>): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext('org-control-plane:bootstrap'))`.execute(trx);
}

/** A user; `passwordHash` null for an account made by SCIM or SSO (they sign in through SSO). */
export async function insertUser(
  db: Db,
  user: { id: string; email: string; name: string | null; passwordHash: string | null; isPlatformAdmin: boolean; provisionedBy?: string | null; emailVerified?: boolean; now: Date },
): Promise<UserRow> {
  return db
    .insertInto('users')
    .values({
      id: user.id,
      email: user.email.trim(),
      email_normalized: normalizeEmail(user.email),
      name: user.name === null ? null : plainName(user.name) || null,
      image: null,
      password_hash: user.passwordHash,
      is_platform_admin: user.isPlatformAdmin,
      provisioned_by_organization_id: user.provisionedBy ?? null,
      email_verified_at: user.emailVerified ? user.now : null,
      created_at: user.now,
      updated_at: user.now,
    })
    .returning(USER_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function setUserEmail(db: Db, userId: string, email: string, now: Date): Promise<void> {
  await db.updateTable('users').set({ email: email.trim(), email_normalized: normalizeEmail(email), updated_at: now }).where('id', '=', userId).execute();
}

/** A new address the user proved (an e-mail change's link): set, and verified now. */
export async function setProvenEmail(db: Db, userId: string, email: string, now: Date): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ email: email.trim(), email_normalized: normalizeEmail(email), email_verified_at: now, updated_at: now })
    .where('id', '=', userId)
    .returning(USER_COLUMNS)
    .executeTakeFirst();
}

/** Marks the address proven (keeps the first proof's time); true when it was not yet. */
export async function markEmailVerified(db: Db, userId: string, now: Date): Promise<boolean> {
  const row = await db.updateTable('users').set({ email_verified_at: now, updated_at: now }).where('id', '=', userId).where('email_verified_at', 'is', null).returning('id').executeTakeFirst();
  return row !== undefined;
}

/** Sets (a hash) or removes (null) the account's password. */
export async function setPasswordHash(db: Db, userId: string, passwordHash: string | null, now: Date): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', userId).execute();
}

/** The user's row, locked for the rest of the transaction (a takeover or a reset decides on it). */
export async function lockUser(db: Db, userId: string): Promise<(UserRow & { has_password: boolean }) | undefined> {
  return db
    .selectFrom('users')
    .select([...USER_COLUMNS, sql<boolean>`password_hash IS NOT NULL`.as('has_password')])
    .where('id', '=', userId)
    .forUpdate()
    .executeTakeFirst();
}

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst();
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').select(USER_COLUMNS).where('email_normalized', '=', normalizeEmail(email)).executeTakeFirst();
}

/**
 * What linking an identity provider's record to an account needs to know (never the hash itself):
 * whether the account has a password, and which organization's SCIM made it.
 */
export async function findLinkable(db: Db, by: { email: string } | { id: string }): Promise<{ id: string; passwordless: boolean; provisionedBy: string | null } | undefined> {
  const query = db.selectFrom('users').select(['id', sql<boolean>`password_hash IS NULL`.as('passwordless'), 'provisioned_by_organization_id as provisionedBy']);
  return ('email' in by ? query.where('email_normalized', '=', normalizeEmail(by.email)) : query.where('id', '=', by.id)).executeTakeFirst();
}

/** Whether the user is an active member (not suspended, not removed) of an organization other than this one; a read of the members table. */
export async function inAnotherOrganization(db: Db, userId: string, organizationId: string): Promise<boolean> {
  const row = await db
    .selectFrom('members')
    .select('id')
    .where('user_id', '=', userId)
    .where('organization_id', '!=', organizationId)
    .where('removed_at', 'is', null)
    .where('suspended_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The only read of a password hash; it never leaves the users and auth services. */
export async function findCredentials(db: Db, email: string): Promise<(UserRow & { password_hash: string | null }) | undefined> {
  return db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'password_hash'])
    .where('email_normalized', '=', normalizeEmail(email))
    .executeTakeFirst();
}

export type AuthMethod = SessionAuthMethod;
export type SecondFactor = 'totp' | 'passkey' | 'recovery_code';

export async function insertSession(
  db: Db,
  session: {
    id: string;
    userId: string;
    tokenHash: string;
    activeOrganizationId: string | null;
    now: Date;
    expiresAt: Date;
    authMethod: AuthMethod;
    secondFactor: SecondFactor | null;
    ip: string | null;
    userAgent: string | null;
    /** Set for a session an SSO sign-in opens. */
    ssoConnectionId: string | null;
  },
): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id: session.id,
      user_id: session.userId,
      token_hash: session.tokenHash,
      active_organization_id: session.activeOrganizationId,
      created_at: session.now,
      expires_at: session.expiresAt,
      revoked_at: null,
      authenticated_at: session.now,
      // Opening a session is its first use; later uses move it at most once a minute.
      last_used_at: session.now,
      auth_method: session.authMethod,
      second_factor: session.secondFactor,
      ip: session.ip,
      user_agent: session.userAgent,
      sso_connection_id: session.ssoConnectionId,
    })
    .execute();
}

/** Renews a live session's authentication time (reauthentication). */
export async function markAuthenticated(db: Db, sessionId: string, now: Date): Promise<void> {
  await db.updateTable('sessions').set({ authenticated_at: now }).where('id', '=', sessionId).where('revoked_at', 'is', null).execute();
}

/** The second factor a session proved (a two-step sign-in, a reauthentication, an enrolment in it). */
export async function setSessionSecondFactor(db: Db, sessionId: string, factor: SecondFactor): Promise<void> {
  await db.updateTable('sessions').set({ second_factor: factor }).where('id', '=', sessionId).where('revoked_at', 'is', null).execute();
}

/** The user holds no factor any more: none of their sessions counts as a second-factor session. */
export async function forgetSecondFactorOfSessions(db: Db, userId: string): Promise<void> {
  await db.updateTable('sessions').set({ second_factor: null }).where('user_id', '=', userId).where('second_factor', 'is not', null).execute();
}

export async function revokeSession(db: Db, sessionId: string, now: Date): Promise<void> {
  await db.updateTable('sessions').set({ revoked_at: now }).where('id', '=', sessionId).where('revoked_at', 'is', null).execute();
}

export async function setSessionOrganization(db: Db, sessionId: string, organizationId: string | null): Promise<void> {
  await db.updateTable('sessions').set({ active_organization_id: organizationId }).where('id', '=', sessionId).execute();
}

export interface SessionListRow {
  id: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date;
  ip: string | null;
  user_agent: string | null;
  auth_method: AuthMethod;
  second_factor: SecondFactor | null;
}

/** The user's live sessions (not revoked, not expired), newest first; never a token hash. */
export async function listLiveSessions(db: Db, userId: string, now: Date): Promise<SessionListRow[]> {
  return db
    .selectFrom('sessions')
    .select(['id', 'created_at', 'last_used_at', 'expires_at', 'ip', 'user_agent', 'auth_method', 'second_factor'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

/** Revokes one live session of the user; false when the user has no such live session. */
export async function revokeSessionOfUser(db: Db, userId: string, sessionId: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Revokes every live session of the user but `keepSessionId` (null: all of them); how many. */
export async function revokeSessionsOfUser(db: Db, userId: string, keepSessionId: string | null, now: Date): Promise<number> {
  let query = db.updateTable('sessions').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).where('expires_at', '>', now);
  if (keepSessionId) query = query.where('id', '<>', keepSessionId);
  const rows = await query.returning('id').execute();
  return rows.length;
}

/**
 * Stamps a session's last use, at most once per `granularityMs` (the condition is in the
 * statement, so concurrent requests write it once).
 */
export async function touchSession(db: Db, sessionId: string, now: Date, granularityMs: number): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ last_used_at: now })
    .where('id', '=', sessionId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', new Date(now.getTime() - granularityMs))]))
    .execute();
}

/** Sets the fields given of a user's profile; the row after, or undefined when there is no such user. */
export async function updateProfile(db: Db, userId: string, fields: { name?: string; image?: string | null }, now: Date): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ ...(fields.name !== undefined ? { name: plainName(fields.name) || null } : {}), ...(fields.image !== undefined ? { image: fields.image } : {}), updated_at: now })
    .where('id', '=', userId)
    .returning(USER_COLUMNS)
    .executeTakeFirst();
}

/**
 * Deletes the account. Its sessions, second factors, SSO links and link tokens go with it (ON
 * DELETE CASCADE); its ended memberships stay with a null user (the caller ends them first).
 */
export async function deleteUser(db: Db, userId: string): Promise<boolean> {
  const row = await db.deleteFrom('users').where('id', '=', userId).returning('id').executeTakeFirst();
  return row !== undefined;
}
