import type { Transaction } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import * as users from '../users/service';
import type { NewSession, Origin, SecondFactor } from '../users/service';
import { recordChange, type AuditContext } from '../audit';
import { findMemberIdOfUser, membershipsOfUser } from '../members/memberships';

/**
 * Opening a password session, shared by the one-step sign-in (src/auth/service.ts) and the second
 * step of a two-step one (src/mfa/service.ts), so both make the same session and audit entry.
 */

/** The organization a new password session opens in: the user's most recently joined one. */
export async function signInOrganization(db: Db, userId: string): Promise<string | null> {
  const [latest] = await membershipsOfUser(db, userId);
  return latest?.id ?? null;
}

/**
 * A new password session in `signInOrganization`'s organization, read in `db` unless the caller
 * read it already (the second step of a sign-in reads it while it checks the code).
 */
export async function openSession(
  deps: AppDeps,
  db: Transaction<DB>,
  userId: string,
  origin: Origin,
  now: Date,
  secondFactor: SecondFactor | null = null,
  organization?: string | null,
): Promise<NewSession & { activeOrganizationId: string | null }> {
  const activeOrganizationId = organization === undefined ? await signInOrganization(db, userId) : organization;
  const session = await users.createSession(db, deps, { userId, authMethod: 'password', secondFactor, ip: origin.ip, userAgent: origin.userAgent, activeOrganizationId }, now);
  return { ...session, activeOrganizationId };
}

/**
 * A sign-in to an organization (signing in, or switching the session's organization) is audited
 * in that organization; a user with no organization leaves no entry (there is no log to write to).
 */
export async function recordSignIn(trx: Transaction<DB>, audit: AuditContext | null, userId: string, organizationId: string | null, how: 'password' | 'switch' | SecondFactor) {
  if (!organizationId) return;
  const memberId = await findMemberIdOfUser(trx, organizationId, userId);
  if (!memberId) return;
  await recordChange(trx, audit, {
    organizationId,
    actor: { type: 'member', id: userId, memberId },
    action: 'member.signed_in',
    target: { type: 'member', id: memberId },
    changes: { method: { from: null, to: how } },
  });
}

/** A signed-in session (password, with the second factor it was completed with), audited. */
export async function openSignInSession(
  deps: AppDeps,
  trx: Transaction<DB>,
  input: { userId: string; secondFactor: SecondFactor | null; organization?: string | null },
  origin: Origin,
  now: Date,
): Promise<NewSession> {
  const { activeOrganizationId, ...session } = await openSession(deps, trx, input.userId, origin, now, input.secondFactor, input.organization);
  await recordSignIn(trx, deps.audit, input.userId, activeOrganizationId, input.secondFactor ?? 'password');
  return session;
}
