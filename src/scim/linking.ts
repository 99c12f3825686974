import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import { PlanLimitReached, enforceLimit } from '../plans';
import type { Changes } from '../audit';
import { isObject, type JsonObject } from './attributes';
import { emailDomainVerified } from './domains';
import * as accounts from './accounts';
import * as store from './directory-store';
import type { LinkReason } from './tables';

/**
 * Linking a directory user to a member (docs/scim.md#directory-users-and-linking): a separate step with an
 * explained outcome, never a reason to refuse provisioning. It runs in the provisioning
 * request's transaction, at create and again whenever an unlinked directory user changes. It
 * writes no audit entry of its own: what it did besides the link (a member provisioned, an
 * account taken over) comes back as `effects`, changes of the request's one entry.
 */
type Trx = Transaction<DB>;

/** A syntactically valid address: one @, a dotted domain, no spaces or quotes (≤ 254 characters). */
const ADDRESS = /^[^\s@"(),:;<>[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;
export const isAddress = (value: unknown): value is string => typeof value === 'string' && value.trim().length <= 254 && ADDRESS.test(value.trim());

/**
 * The sign-in e-mail: the first valid address among the `primary` entry of `emails`, the `work`
 * entry, the other entries in order, then `userName` when it is an address.
 */
export function emailToLink(userName: string, attributes: JsonObject): string | null {
  const emails = Array.isArray(attributes.emails) ? attributes.emails.filter(isObject) : [];
  const ordered = [...emails.filter((e) => e.primary === true), ...emails.filter((e) => typeof e.type === 'string' && e.type.toLowerCase() === 'work'), ...emails];
  const found = [...ordered.map((e) => e.value), userName].find(isAddress);
  return found === undefined ? null : found.trim();
}

export interface LinkTarget {
  id: string;
  email: string | null;
  emailNormalized: string | null;
  active: boolean;
  name: string | null;
  now: Date;
  /** The calling SCIM token's creator: an adopted membership is suspended only within their permissions. */
  tokenCreatorMemberId: string | null;
}

export type LinkOutcome = { memberId: string; linkReason: null } | { memberId: null; linkReason: LinkReason };

/** The link, and what linking changed besides it, as audit changes (`member`, `accountSecured`). */
export interface Linked {
  outcome: LinkOutcome;
  effects: Changes;
}

async function unlinked(trx: Trx, organizationId: string, id: string, reason: LinkReason): Promise<Linked> {
  await store.setLink(trx, organizationId, id, { reason });
  return { outcome: { memberId: null, linkReason: reason }, effects: {} };
}

/**
 * Links the directory user when it can:
 * - no account has the address → a password-less account (verified: the provider vouches) and a member;
 * - the account is password-less and this organization's SCIM made it, or its address is in a
 *   domain the organization verified → that account, adopting its membership or becoming a member;
 * otherwise it stays unlinked with the reason. Two directory users may carry one e-mail: the one
 * already linked keeps it. A member takes a seat: at the plan's limit the user stays unlinked.
 */
export async function link(trx: Trx, deps: AppDeps, organizationId: string, target: LinkTarget): Promise<Linked> {
  if (target.email === null || target.emailNormalized === null) return unlinked(trx, organizationId, target.id, 'no_valid_email');
  const account = await accounts.findAccountByEmail(trx, target.email);
  if (await store.holderOfEmail(trx, organizationId, target.emailNormalized, account?.id ?? null, target.id)) return unlinked(trx, organizationId, target.id, 'email_shared_with');
  if (account && !((account.passwordless && account.provisionedBy === organizationId) || (await emailDomainVerified(trx, organizationId, target.email)))) {
    return unlinked(trx, organizationId, target.id, 'email_belongs_to_other_account');
  }
  const effects: Changes = {};
  let memberId = account ? await accounts.memberOfAccount(trx, organizationId, account.id) : undefined;
  if (!memberId) {
    try {
      // Seat limit: counted with the organization row locked, in the transaction that adds.
      await enforceLimit(trx, deps.settings, organizationId, 'members');
    } catch (err) {
      if (err instanceof PlanLimitReached) return unlinked(trx, organizationId, target.id, 'member_limit');
      throw err;
    }
    const userId = account?.id ?? (await accounts.createProvisionedAccount(trx, { email: target.email, name: target.name, organizationId, now: target.now }));
    memberId = await accounts.addProvisionedMember(trx, { organizationId, userId, active: target.active, now: target.now });
    effects.member = { from: null, to: { id: memberId, role: 'member', active: target.active } };
  } else {
    // An adopted membership follows the directory user's `active` (the owner is never suspended).
    const member = await accounts.memberRole(trx, organizationId, memberId);
    if (member !== 'owner') {
      if (!target.active) await accounts.requireTokenMayActOn(trx, organizationId, target.tokenCreatorMemberId, memberId);
      await accounts.setMemberActive(trx, organizationId, memberId, target.active, target.now);
    }
  }
  // The directory proves an existing account's mailbox: one nobody had proven is taken over.
  const secured = account ? await accounts.secureUnverifiedAccount(trx, deps, account.id, organizationId) : null;
  if (secured) effects.accountSecured = { from: null, to: secured };
  await store.setLink(trx, organizationId, target.id, { memberId });
  // Groups it was put in while unlinked now hold its member.
  await accounts.joinTeams(trx, organizationId, memberId, await store.groupsOf(trx, organizationId, target.id), target.now);
  return { outcome: { memberId, linkReason: null }, effects };
}

/**
 * A linked directory user's new sign-in e-mail reaches its account only when the account is this
 * organization's own (made by its SCIM, in no other organization) or the address is in a domain
 * the organization verified, and no other account has it; otherwise the account keeps its address
 * and the directory user keeps its link. Never an error.
 */
export async function followRename(trx: Trx, organizationId: string, userId: string, target: LinkTarget): Promise<boolean> {
  if (target.email === null) return false;
  // Read before the one call to the accounts' owner, which decides and changes (src/users/service.ts).
  const domainVerified = await emailDomainVerified(trx, organizationId, target.email);
  return accounts.followRename(trx, { userId, email: target.email, organizationId, domainVerified, now: target.now });
}

/**
 * After a linked directory user goes, the oldest one that shared its e-mail links in its place;
 * the change (`relinked`) for the removing request's entry, none when nobody was waiting.
 */
export async function relinkSharers(trx: Trx, deps: AppDeps, organizationId: string, emailNormalized: string, now: Date, tokenCreatorMemberId: string | null): Promise<Changes> {
  const next = await store.oldestSharer(trx, organizationId, emailNormalized);
  if (!next) return {};
  const { outcome, effects } = await link(trx, deps, organizationId, { id: next.id, email: next.email, emailNormalized, active: next.active, name: null, now, tokenCreatorMemberId });
  return { relinked: { from: null, to: { directoryUserId: next.id, ...outcome, ...effects } } };
}
