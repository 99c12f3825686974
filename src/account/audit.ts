import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { recordChange, type AuditContext, type Changes } from '../audit';
import { activeMembersOfUser } from '../members/memberships';

/**
 * A change to an account (its address proven, its password set) is the user's, not one
 * organization's: it is recorded in each organization the user belongs to, acted by the user's
 * member there, with no secret in `changes` (a user in no organization leaves no entry).
 */
export async function recordAccountChange(trx: Transaction<DB>, audit: AuditContext | null, userId: string, action: string, changes: Changes): Promise<void> {
  for (const { organizationId, memberId } of await activeMembersOfUser(trx, userId)) {
    await recordChange(trx, audit, { organizationId, actor: { type: 'member', id: userId, memberId }, action, target: { type: 'member', id: memberId }, changes });
  }
}
