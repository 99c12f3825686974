import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { recordChange, type AuditContext, type Changes } from '../audit';
import { findMemberIdOfUser, membershipsOfUser } from '../members/memberships';

/**
 * A change to the user's own account (sessions, profile, e-mail) is audited in each organization
 * the user belongs to, with the user's membership there as actor and target: each
 * organization's administrators see what happened to their member's account.
 */
export async function recordAccountChange(trx: Transaction<DB>, audit: AuditContext | null, userId: string, action: string, changes?: Changes): Promise<void> {
  for (const organization of await membershipsOfUser(trx, userId)) {
    const memberId = await findMemberIdOfUser(trx, organization.id, userId);
    if (!memberId) continue;
    await recordChange(trx, audit, {
      organizationId: organization.id,
      actor: { type: 'member', id: userId, memberId },
      action,
      target: { type: 'member', id: memberId },
      ...(changes ? { changes } : {}),
    });
  }
}
