import type { Transaction } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import * as store from './store';
import { toUser } from './mappers';
import type { AuthMethod, SecondFactor, UserRow } from './store';

/**
 * The users area: the one writer of `users` and `sessions`. Sign-in, sign-up, SSO, SCIM and
 * invitations make accounts and sessions through these functions (each takes the caller's
 * transaction, so the account or session commits with the change that needed it).
 */
export { normalizeEmail } from '../lib/email';
export { issuePasswordReset, accountOfResetLink, resetPassword } from './password-reset';
export { issueAccountToken, consumeAccountToken, peekAccountToken, endPendingAccountTokens, invalidToken, TOKEN_LIFETIME_MS, type TokenPurpose, type ConsumedToken } from './tokens';
export type { AuthMethod, SecondFactor, SessionListRow, UserRow } from './store';

/** Every session token starts with this (src/audit/redact.ts recognises it). */
const SESSION_TOKEN_PREFIX = 'cps';

export interface NewSession {
  token: string;
  expiresAt: string;
}

/** Where a session is opened from (stored on it; shown in a sessions list). */
export interface Origin {
  ip: string;
  userAgent: string | undefined;
}

export interface SessionInput {
  userId: string;
  /** How the user proved themself: password (sign-in, sign-up, bootstrap), sso, reset, invitation. */
  authMethod: AuthMethod;
  secondFactor?: SecondFactor | null;
  ip?: string | null;
  userAgent?: string | null;
  /** The organization the session starts in (null: none). */
  activeOrganizationId: string | null;
  /** The SSO connection an `sso` session was opened through. */
  ssoConnectionId?: string | null;
}

/** The one way a session is made: a `cps_` token, only its hash stored, expiring after the session TTL. */
export async function createSession(db: Db, deps: Pick<AppDeps, 'settings' | 'clock'>, input: SessionInput, now = deps.clock.now()): Promise<NewSession> {
  const token = randomSecret(SESSION_TOKEN_PREFIX);
  const expiresAt = new Date(now.getTime() + deps.settings.sessionTtlMs);
  await store.insertSession(db, {
    id: newId('session'),
    userId: input.userId,
    tokenHash: sha256Hex(token),
    activeOrganizationId: input.activeOrganizationId,
    now,
    expiresAt,
    authMethod: input.authMethod,
    secondFactor: input.secondFactor ?? null,
    // An empty string is what a request without a known address carries: stored as unknown.
    ip: input.ip || null,
    userAgent: input.userAgent || null,
    ssoConnectionId: input.ssoConnectionId ?? null,
  });
  return { token, expiresAt: expiresAt.toISOString() };
}

/** A session for a user who just signed in, and the user as the API shows them: what a sign-in answers. */
export async function openSessionFor(db: Db, deps: Pick<AppDeps, 'settings' | 'clock'>, user: UserRow, input: SessionInput, now = deps.clock.now()): Promise<{ user: ReturnType<typeof toUser>; session: NewSession }> {
  return { user: toUser(user), session: await createSession(db, deps, input, now) };
}

export const revokeSession = store.revokeSession;
/** The user's live sessions, newest first (GET /v1/me/sessions). */
export const listLiveSessions = store.listLiveSessions;
export const revokeSessionOfUser = store.revokeSessionOfUser;
/** Every live session of the user but one (null: all), revoked; how many. */
export const revokeSessionsOfUser = store.revokeSessionsOfUser;

/** Writing `last_used_at` on every request would turn reads into writes; once a minute is enough. */
export const SESSION_LAST_USED_GRANULARITY_MS = 60_000;

/** A session was used at `now`: stamped when its last stamp is older than the granularity. */
export async function touchSession(db: Db, sessionId: string, lastUsedAt: Date | null, now: Date): Promise<void> {
  if (lastUsedAt && now.getTime() - lastUsedAt.getTime() < SESSION_LAST_USED_GRANULARITY_MS) return;
  await store.touchSession(db, sessionId, now, SESSION_LAST_USED_GRANULARITY_MS);
}
export const markAuthenticated = store.markAuthenticated;
export const setSessionSecondFactor = store.setSessionSecondFactor;
export const forgetSecondFactorOfSessions = store.forgetSecondFactorOfSessions;
export const setSessionOrganization = store.setSessionOrganization;

/** A new account; `passwordHash` null for one made by SCIM or SSO (it signs in through SSO). */
export async function createUser(
  db: Db,
  user: { email: string; name: string | null; passwordHash: string | null; isPlatformAdmin?: boolean; provisionedBy?: string; emailVerified?: boolean; now: Date },
): Promise<UserRow> {
  return store.insertUser(db, {
    id: newId('user'),
    email: user.email,
    name: user.name,
    passwordHash: user.passwordHash,
    isPlatformAdmin: user.isPlatformAdmin ?? false,
    provisionedBy: user.provisionedBy ?? null,
    emailVerified: user.emailVerified ?? false,
    now: user.now,
  });
}

/** The account of this address, or a new one made with `user` (its address): one call for a first sign-in that links or creates. */
export async function findOrCreateUser(db: Db, user: Parameters<typeof createUser>[1]): Promise<{ user: UserRow; created: boolean }> {
  const existing = await store.findUserByEmail(db, user.email);
  return existing ? { user: existing, created: false } : { user: await createUser(db, user), created: true };
}

/**
 * Marks the account's address proven (a verification or reset link, an invitation accepted by
 * token, an identity provider's word in a verified domain). True when it was not yet; the first
 * proof's time is kept. Also the setup path test factories and benchmark seeders use for accounts
 * they sign up (they prove nothing by mail; the verification tests do).
 */
export const markEmailVerified = store.markEmailVerified;

/** Sets the account's password hash (a reset, a change); the caller checked the new password. */
export const setPasswordHash = store.setPasswordHash;


export const lockUser = store.lockUser;

/** Whether an account has a password and which organization's SCIM made it (linking a directory user). */
export const findLinkableAccount = store.findLinkable;

/** Changes an account's e-mail (a unique violation is the caller's to translate). */
export const changeEmail = store.setUserEmail;

/**
 * An organization's directory renames a linked account (SCIM, docs/scim.md#directory-users-and-linking):
 * the account takes the address only when no other account has it and the account is the
 * organization's own (password-less, made by its directory, an active member of no other
 * organization) or the address is in a domain the organization verified (`domainVerified`, the
 * caller's read). One call: the checks and the change. True when the address changed.
 */
export async function followDirectoryRename(db: Db, input: { userId: string; email: string; organizationId: string; domainVerified: boolean; now: Date }): Promise<boolean> {
  const holder = await store.findLinkable(db, { email: input.email });
  if (holder && holder.id !== input.userId) return false;
  const account = await store.findLinkable(db, { id: input.userId });
  if (!account) return false;
  const own = account.passwordless && account.provisionedBy === input.organizationId && !(await store.inAnotherOrganization(db, input.userId, input.organizationId));
  if (!own && !input.domainVerified) return false;
  await store.setUserEmail(db, input.userId, input.email, input.now);
  return true;
}

/** Sets an address the user proved with an e-mail change's link (a unique violation is the caller's to translate). */
export const setProvenEmail = store.setProvenEmail;

/** Sets a user's name and picture (the fields given). */
export const updateProfile = store.updateProfile;

export const deleteUser = store.deleteUser;

export const findUser = store.findUserById;
export const findUserByEmail = store.findUserByEmail;
/** The only read of a password hash (sign-in and reauthentication). */
export const findCredentials = store.findCredentials;

export const countUsers = store.countUsers;

/** Serializes bootstraps inside the bootstrap transaction. */
export async function lockBootstrap(trx: Transaction<DB>): Promise<void> {
  await store.lockBootstrap(trx);
}
