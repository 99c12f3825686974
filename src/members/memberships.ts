import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { Role } from '../domain/principal';
import { newId } from '../lib/ids';
import { revokeKeysOfMember } from '../api-keys/service';
import * as store from './store';

/**
 * The members area's writes that other areas call: organization creation, invitations, SSO,
 * SCIM and role deletion add, suspend, restore and re-role members only through these (the
 * route-facing functions are in ./service.ts). Each takes the caller's transaction, so the
 * membership change commits or rolls back with the change that made it; none writes an audit
 * entry (the caller records the change it made, in its own words).
 */
/** A new member; `suspended` for one SCIM provisions inactive. */
export async function addMember(
  trx: Transaction<DB>,
  input: { organizationId: string; userId: string; role: Role; now: Date; id?: string; suspended?: boolean },
): Promise<string> {
  const id = input.id ?? newId('member');
  await store.insertMember(trx, { id, organizationId: input.organizationId, userId: input.userId, type: 'user', role: input.role, now: input.now, suspendedAt: input.suspended ? input.now : null });
  return id;
}

/**
 * The member of a new service account (src/service-accounts): no user, never the owner (the
 * caller has checked the role is assignable). It ends like any member's (removal).
 */
export async function addServiceAccountMember(trx: Transaction<DB>, input: { organizationId: string; role: Role; now: Date }): Promise<string> {
  const id = newId('member');
  await store.insertMember(trx, { id, organizationId: input.organizationId, userId: null, type: 'service_account', role: input.role, now: input.now });
  return id;
}

/**
 * Suspends (SCIM `active: false`) or restores an active member; nothing when it already is as
 * asked. A suspension takes effect at once: sessions stop reaching the organization (they check
 * suspended_at) and the member's API keys are revoked for good; a restore does not bring them back.
 */
export async function setActive(trx: Transaction<DB>, organizationId: string, memberId: string, active: boolean, now: Date): Promise<void> {
  const member = await store.findMember(trx, organizationId, memberId);
  if (!member || (member.suspended_at == null) === active) return;
  if (!active) await revokeKeysOfMember(trx, organizationId, memberId, now);
  await store.setSuspendedAt(trx, organizationId, memberId, active ? null : now, now);
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
export const countServiceAccounts = store.countServiceAccounts;
export const membershipsOfUser = store.membershipsOfUser;
/** The same memberships with the user's member in each: one read for an entry per organization. */
export const activeMembersOfUser = store.activeMembersOfUser;
/** Suspended memberships included (an account being deleted ends them all). */
export const openMembershipsOfUser = store.openMembershipsOfUser;
