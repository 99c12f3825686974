import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import { recordChange } from '../audit';
import { revokeKeysOfUser } from '../api-keys/service';
import { revokeTokensCreatedByUser } from '../scim/tokens';
import { endCredentialsOfAccountsCreatedByUser } from '../service-accounts/service';
import { replaceTokensOfWorkersCreatedByUser } from '../workers/lifecycle';
import { findMemberIdOfUser, membershipsOfUser } from '../members/memberships';
import * as users from '../users/service';

/**
 * What proved the mailbox of an account nobody had proven yet
 * (docs/accounts.md#linking-accounts-safely): an identity provider, an invitation token, the
 * verification link confirmed outside the account's sessions, or its "this wasn't me" link when
 * the account cannot simply be deleted.
 */
export type TakeoverReason = 'sso' | 'scim' | 'invitation' | 'verification' | 'declined';

/** What ended of the credentials an account made before anyone proved its address. */
export interface UntrustedCredentialsEnded {
  apiKeysRevoked: number;
  scimTokensRevoked: number;
  serviceAccountsDisabled: number;
  workerTokensReplaced: number;
}

export interface Takeover extends UntrustedCredentialsEnded {
  passwordRemoved: boolean;
  sessionsRevoked: number;
}

/**
 * Ends every credential the account made while its address was unproven
 * (docs/accounts.md#linking-accounts-safely): its own API keys, and in every organization its
 * members created credentials in, the SCIM tokens, the service accounts' credentials (disabled,
 * secrets deleted, keys revoked) and the workers' host tokens (replaced by ones nobody was shown).
 * Whoever signed up with the address may have made them for an organization the address's owner
 * now holds. Sessions are the caller's: a reset keeps none, a takeover keeps none, but each says so
 * in its own entry.
 */
export async function endUntrustedCredentials(trx: Transaction<DB>, deps: Pick<AppDeps, 'clock' | 'secrets'>, userId: string): Promise<UntrustedCredentialsEnded> {
  const now = deps.clock.now();
  return {
    apiKeysRevoked: await revokeKeysOfUser(trx, userId, now),
    scimTokensRevoked: await revokeTokensCreatedByUser(trx, userId, now),
    serviceAccountsDisabled: await endCredentialsOfAccountsCreatedByUser(trx, userId, now),
    workerTokensReplaced: await replaceTokensOfWorkersCreatedByUser(trx, deps, userId),
  };
}

/**
 * Closes account pre-hijacking (docs/accounts.md#linking-accounts-safely). An identity provider
 * in a verified domain (an SSO first sign-in, a SCIM link), an invitation token, or a verification
 * link confirmed from outside the account's sessions is the first proof that the account's address
 * belongs to the person now arriving; everything set on the account before it is untrusted:
 * whoever signed up with that address may not be its owner. So the password is removed, every
 * session of the user is revoked and every credential it made ended (endUntrustedCredentials),
 * pending link tokens end, the address is marked
 * verified, and each organization the user belongs to (and `organizationId`, the one whose
 * provider or invitation proved it) records `member.account_secured`.
 *
 * Inside the linking transaction, before the new session is opened. Returns null, changing
 * nothing, when the account's address is already verified (it is linked as it is).
 * `inCallersEntry`: the request's own audit entry in `organizationId` records the takeover (one
 * entry per request, SCIM's), so no separate entry is written there; the user's other
 * organizations still get theirs.
 */
export async function takeOverUnverifiedAccount(
  trx: Transaction<DB>,
  deps: Pick<AppDeps, 'clock' | 'audit' | 'secrets'>,
  userId: string,
  reason: TakeoverReason,
  organizationId: string | null = null,
  inCallersEntry = false,
): Promise<Takeover | null> {
  const user = await users.lockUser(trx, userId);
  if (!user || user.email_verified_at !== null) return null;
  const now = deps.clock.now();
  await users.setPasswordHash(trx, userId, null, now);
  await users.markEmailVerified(trx, userId, now);
  const sessionsRevoked = await users.revokeSessionsOfUser(trx, userId, null, now);
  const ended = await endUntrustedCredentials(trx, deps, userId);
  await users.endPendingAccountTokens(trx, userId, null, now);
  const result: Takeover = { passwordRemoved: user.has_password, sessionsRevoked, ...ended };

  const organizations = new Set((await membershipsOfUser(trx, userId)).map((o) => o.id));
  if (organizationId) organizations.add(organizationId);
  if (organizationId && inCallersEntry) organizations.delete(organizationId);
  for (const orgId of organizations) {
    const memberId = (await findMemberIdOfUser(trx, orgId, userId)) ?? null;
    await recordChange(trx, deps.audit, {
      organizationId: orgId,
      actor: { type: 'system', id: null, memberId: null },
      action: 'member.account_secured',
      target: { type: memberId ? 'member' : 'user', id: memberId ?? userId },
      changes: {
        reason: { from: null, to: reason },
        emailVerified: { from: false, to: true },
        passwordRemoved: result.passwordRemoved,
        sessionsRevoked,
        ...ended,
      },
    });
  }
  return result;
}
