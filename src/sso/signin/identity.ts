import type { Transaction } from 'kysely';
import type { DB } from '../../db/schema';
import type { AppDeps } from '../../domain/deps';
import { recordChange, created } from '../../audit';
import { isUniqueViolation } from '../../db/errors';
import { Conflict, Forbidden } from '../../lib/errors';
import { changeEmail as setUserEmail, findOrCreateUser, findUser, normalizeEmail, type UserRow } from '../../users/service';
import { takeOverUnverifiedAccount } from '../../account/takeover';
import { addMember, applyMappedRole } from '../../members/memberships';
import { enforceLimit } from '../../plans';
import * as store from './store';
import type { SignInConnection } from './store';

/** Who the identity provider says signed in (OIDC or SAML alike). */
export interface SsoProfile {
  subject: string;
  email: string | null;
  name: string | null;
  groups: string[];
}

export interface SignedInMember {
  user: UserRow;
  memberId: string;
}

const outsideDomains = (email: string | null) =>
  new Forbidden(
    'email_domain_not_verified',
    email
      ? "The identity provider's e-mail is not in a domain the organization has verified."
      : 'The identity provider sent no e-mail, so it cannot be matched to a domain the organization has verified.',
  );

function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).trim().toLowerCase().replace(/\.$/, '');
}

async function inVerifiedDomain(trx: Transaction<DB>, organizationId: string, email: string | null): Promise<boolean> {
  return email !== null && (await store.domainVerifiedBy(trx, organizationId, domainOf(email)));
}

/**
 * The role the connection maps this sign-in to: the first `roleMappings` entry whose group the
 * provider sent, else `defaultRole`. DELETE /v1/roles refuses a role a connection gives (or moves
 * the mappings with `reassignTo`); should a mapping still name a missing role, it falls back to
 * the default, then to `member`. `owner` is never handed out this way.
 */
async function mappedRole(trx: Transaction<DB>, connection: SignInConnection, groups: string[]): Promise<string> {
  const sent = new Set(groups);
  const candidates = [...connection.role_mappings.filter((m) => sent.has(m.group)).map((m) => m.role), connection.default_role].filter((r) => r !== 'owner');
  const existing = await store.existingRoleKeys(trx, connection.organization_id, [...new Set(candidates)]);
  return candidates.find((r) => existing.has(r)) ?? 'member';
}

/**
 * Inside the sign-in transaction: finds the user of (connection, subject) — never by e-mail
 * alone — or, on a first sign-in whose e-mail is in a domain the organization verified, links the
 * account of that e-mail (or creates a password-less one) and the identity. Then makes sure the
 * user is a member (just in time, within the plan's member limit) with the mapped role, applied
 * again at every sign-in except to the owner. Throws (and so writes nothing) when the e-mail is
 * outside the verified domains.
 */
export async function signInMember(trx: Transaction<DB>, deps: AppDeps, connection: SignInConnection, profile: SsoProfile): Promise<SignedInMember> {
  const now = deps.clock.now();
  const organizationId = connection.organization_id;
  // Two first sign-ins of one subject at once: the second waits, then finds the identity.
  await store.lockSubject(trx, connection.id, profile.subject);
  const identity = await store.lockIdentity(trx, connection.id, profile.subject);
  let user: UserRow | undefined;
  if (identity) {
    user = await findUser(trx, identity.user_id);
    if (!user) throw new Error('an SSO identity without its user');
    if (profile.email && normalizeEmail(profile.email) !== normalizeEmail(user.email)) {
      // A known subject whose e-mail changed at the provider: followed only into a verified domain.
      if (!(await inVerifiedDomain(trx, organizationId, profile.email))) throw outsideDomains(profile.email);
      await changeEmail(trx, user.id, profile.email, now);
      user = { ...user, email: profile.email.trim() };
    }
    await store.touchIdentity(trx, connection.id, profile.subject, profile.email ?? identity.email, now);
  } else {
    if (!(await inVerifiedDomain(trx, organizationId, profile.email))) throw outsideDomains(profile.email);
    const email = profile.email!;
    await store.lockEmail(trx, normalizeEmail(email));
    // The account of the address, or a new one: the provider vouches for an address in a domain the organization verified.
    const found = await findOrCreateUser(trx, { email, name: profile.name, passwordHash: null, emailVerified: true, now });
    user = found.user;
    // The provider proves the mailbox (docs/accounts.md#linking-accounts-safely): an existing account nobody had proven is
    // taken over (password, sessions and keys of whoever made it revoked), a verified one linked.
    if (!found.created && (await takeOverUnverifiedAccount(trx, deps, user.id, 'sso', organizationId))) {
      user = await findUser(trx, user.id);
      if (!user) throw new Error('the linked account vanished');
    }
    await store.insertIdentity(trx, { connectionId: connection.id, subject: profile.subject, organizationId, userId: user.id, email, now });
  }

  // One audit entry per sign-in: the member it created, or the role it changed, or the sign-in.
  const actor = (memberId: string) => ({ type: 'member' as const, id: user!.id, memberId });
  const role = await mappedRole(trx, connection, profile.groups);
  const membership = await store.lockMembership(trx, organizationId, user.id);
  if (!membership) {
    await enforceLimit(trx, deps.settings, organizationId, 'members');
    const memberId = await addMember(trx, { organizationId, userId: user.id, role, now });
    await recordChange(trx, deps.audit, {
      organizationId,
      actor: actor(memberId),
      action: 'member.provisioned',
      target: { type: 'member', id: memberId },
      changes: created({ email: user.email, role, method: 'sso', connectionId: connection.id }),
    });
    return { user, memberId };
  }
  const memberId = membership.id;
  if (membership.suspended_at) throw new Forbidden('member_suspended', 'This member is suspended in the organization.');
  const roleChanges = membership.role !== 'owner' && membership.role !== role;
  if (roleChanges) await applyMappedRole(trx, organizationId, memberId, role);
  await recordChange(trx, deps.audit, {
    organizationId,
    actor: actor(memberId),
    action: roleChanges ? 'member.role_changed' : 'member.signed_in',
    target: { type: 'member', id: memberId },
    changes: {
      method: { from: null, to: 'sso' },
      connectionId: { from: null, to: connection.id },
      ...(roleChanges ? { role: { from: membership.role, to: role } } : {}),
    },
  });
  return { user, memberId };
}

async function changeEmail(trx: Transaction<DB>, userId: string, email: string, now: Date): Promise<void> {
  try {
    await setUserEmail(trx, userId, email, now);
  } catch (err) {
    if (isUniqueViolation(err)) throw new Conflict('email_taken', "Another account already uses the identity provider's new e-mail.");
    throw err;
  }
}
