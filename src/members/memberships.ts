import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { Role } from '../domain/principal';
import { newId } from '../lib/ids';
import { revokeKeysOfMember } from '../api-keys/service';
import * as store from './store';
import type { DirectoryColumns } from './store';

/**
 * The members area's writes that other areas call: organization creation, invitations, SSO,
 * SCIM and role deletion add, suspend, restore and re-role members only through these (the
 * route-facing functions are in ./service.ts). Each takes the caller's transaction, so the
 * membership change commits or rolls back with the change that made it; none writes an audit
 * entry (the caller records the change it made, in its own words).
 */
export type { DirectoryColumns } from './store';

/** A new active member; `directory` for one SCIM provisions (its SCIM columns, maybe suspended). */
export async function addMember(
  trx: Transaction<DB>,
  input: { organizationId: string; userId: string; role: Role; now: Date; id?: string; directory?: DirectoryColumns; suspended?: boolean },
): Promise<string> {
  const id = input.id ?? newId('member');
  await store.insertMember(trx, {
    id,
    organizationId: input.organizationId,
    userId: input.userId,
    role: input.role,
    now: input.now,
    directory: input.directory,
    suspendedAt: input.suspended ? input.now : null,
  });
  return id;
}

/**
 * Writes an active member's SCIM state: its directory columns and whether it is suspended. A
 * suspension takes effect at once: sessions stop reaching the organization (they check
 * suspended_at) and the member's API keys are revoked for good; a restore (active again) clears
 * it. `wasSuspendedAt` is the member's current suspension time (kept while it stays suspended).
 */
export async function saveDirectoryState(
  trx: Transaction<DB>,
  organizationId: string,
  memberId: string,
  state: DirectoryColumns & { active: boolean; wasSuspendedAt: Date | null; now: Date },
): Promise<void> {
  const { active, wasSuspendedAt, now } = state;
  if (!active && wasSuspendedAt === null) await suspendMember(trx, organizationId, memberId, now);
  const suspendedAt = active ? null : (wasSuspendedAt ?? now);
  await store.updateDirectoryState(trx, organizationId, memberId, { externalId: state.externalId, attributes: state.attributes, suspendedAt, now });
}

/** What a suspension does beyond marking the member: their API keys stop working. */
async function suspendMember(trx: Transaction<DB>, organizationId: string, memberId: string, now: Date): Promise<void> {
  await revokeKeysOfMember(trx, organizationId, memberId, now);
}

/** An SSO connection's mapped role, applied at sign-in (never to the owner). */
export const applyMappedRole = store.setMappedRole;

/** Every member holding `fromKey` moves to `toKey` (the role is being deleted). */
export const reassignRole = store.reassignRole;

/** Reads other areas need. */
export const findMember = store.findMember;
export const findMemberIdOfUser = store.findMemberIdOfUser;
export const existingMemberIds = store.existingMemberIds;
export const countActiveMembers = store.countActiveMembers;
export const membershipsOfUser = store.membershipsOfUser;
