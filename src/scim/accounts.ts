import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import * as users from '../users/service';
import { takeOverUnverifiedAccount } from '../account/takeover';
import * as memberships from '../members/memberships';
import { removeInTransaction } from '../members/service';
import { directoryTeams } from '../teams/service';
import { requireMemberMayActOn } from '../roles/service';
import { Forbidden } from '../lib/errors';
import { ScimError } from './errors';

/**
 * Everything SCIM asks of the areas that own accounts (src/users), memberships (src/members) and
 * teams (src/teams), in one place: directory users never write those tables themselves. Each
 * function takes the caller's transaction, so a provisioning change commits as one.
 */
type Trx = Transaction<DB>;

export const normalizeEmail = users.normalizeEmail;

export interface Account {
  id: string;
  passwordless: boolean;
  /** The organization whose SCIM made the account (null: signed up, invited, or made by SSO). */
  provisionedBy: string | null;
}

export const findAccountByEmail = (trx: Trx, email: string): Promise<Account | undefined> => users.findLinkableAccount(trx, { email });
export const findAccountById = (trx: Trx, id: string): Promise<Account | undefined> => users.findLinkableAccount(trx, { id });

/** A password-less account (it signs in through SSO) that this organization's SCIM made; the provider vouches for its address. */
export async function createProvisionedAccount(trx: Trx, input: { email: string; name: string | null; organizationId: string; now: Date }): Promise<string> {
  return (await users.createUser(trx, { email: input.email, name: input.name, passwordHash: null, provisionedBy: input.organizationId, emailVerified: true, now: input.now })).id;
}

/**
 * Linking a directory user to an existing account whose address nobody has proven: the
 * organization's directory (in its verified domain) is the proof, so the account is taken over
 * (docs/accounts.md#linking-accounts-safely). A verified account is linked as it is. The
 * request's one audit entry records it (the caller folds the result into its changes).
 */
export const secureUnverifiedAccount = (trx: Trx, deps: Pick<AppDeps, 'clock' | 'audit' | 'secrets'>, userId: string, organizationId: string) =>
  takeOverUnverifiedAccount(trx, deps, userId, 'scim', organizationId, true);

/** A linked account follows its directory user's new address where the accounts' owner allows it (src/users/service.ts). */
export const followRename = users.followDirectoryRename;

export const memberOfAccount = (trx: Trx, organizationId: string, userId: string) => memberships.findMemberIdOfUser(trx, organizationId, userId);

export async function memberRole(trx: Trx, organizationId: string, memberId: string): Promise<string | undefined> {
  return (await memberships.findMember(trx, organizationId, memberId))?.role;
}

/** A new member, role `member`; suspended from the start when its directory user is inactive. */
export const addProvisionedMember = (trx: Trx, input: { organizationId: string; userId: string; active: boolean; now: Date }) =>
  memberships.addMember(trx, { organizationId: input.organizationId, userId: input.userId, role: 'member', suspended: !input.active, now: input.now });

export const setMemberActive = memberships.setActive;

/**
 * A SCIM token acts with the permissions of the member who created it: it suspends or removes only
 * members whose permissions are all that member's (a removed creator holds none). SCIM 403
 * otherwise, nothing changed.
 */
export async function requireTokenMayActOn(trx: Trx, organizationId: string, tokenCreatorMemberId: string | null, memberId: string): Promise<void> {
  try {
    await requireMemberMayActOn(trx, organizationId, tokenCreatorMemberId, memberId);
  } catch (err) {
    if (err instanceof Forbidden) throw new ScimError(403, undefined, `${err.message} (a SCIM token acts with the permissions of the member who created it)`);
    throw err;
  }
}

/** Removes the member as DELETE /v1/members does (keys revoked, teams left); false for the owner. */
export const removeMember = removeInTransaction;

export async function joinTeams(trx: Trx, organizationId: string, memberId: string, teamIds: string[], now: Date): Promise<void> {
  for (const teamId of teamIds) await directoryTeams.addMembers(trx, organizationId, teamId, [memberId], now);
}

export const leaveTeam = (trx: Trx, organizationId: string, teamId: string, memberIds: string[]) => directoryTeams.removeMembers(trx, organizationId, teamId, memberIds);
