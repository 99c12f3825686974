import type { Db } from '../db/schema';
import { Forbidden } from '../lib/errors';
import { emailDomainOf } from './domain-name';

/**
 * SSO enforcement (docs/sso.md#enforcement): while an organization enforces SSO, an e-mail in one
 * of its verified domains signs in through SSO only. Checked where a password would otherwise
 * prove the user (sign-in, reauthentication), where an account would be made without the
 * identity provider (sign-up), and at invitation acceptance outside an SSO session of the
 * enforcing organization. The owner of the enforcing organization keeps password sign-in
 * (break-glass when the IdP is down).
 * Sessions: while enforced, the organization accepts only sessions made through its own
 * connections (and its owner's). The session query flags any other session of a member
 * (`ssoMissing`, src/principal/session.ts) and the session gate answers 403 `sso_required` on the
 * organization's routes, from the request after enforcement is turned on; switching into the
 * organization is refused here.
 */
export const ssoRequired = () =>
  new Forbidden('sso_required', "Your organization requires single sign-on for this e-mail address: sign in through SSO (POST /v1/auth/sso/start).");

/** The organization enforcing SSO for this e-mail (its domain verified there), with its owner. */
export async function enforcingOrganization(db: Db, email: string): Promise<{ organizationId: string; ownerUserId: string | null } | undefined> {
  const row = await db
    .selectFrom('sso_domains as d')
    .innerJoin('organizations as o', 'o.id', 'd.organization_id')
    .leftJoin('members as m', (join) => join.onRef('m.organization_id', '=', 'o.id').on('m.role', '=', 'owner').on('m.removed_at', 'is', null))
    .select(['o.id as organization_id', 'm.user_id as owner_user_id'])
    .where('d.domain', '=', emailDomainOf(email))
    .where('d.status', '=', 'verified')
    .where('o.sso_enforced', '=', true)
    .executeTakeFirst();
  return row ? { organizationId: row.organization_id, ownerUserId: row.owner_user_id } : undefined;
}

/** Password sign-in and reauthentication: 403 `sso_required` unless the user owns the enforcing organization. */
export async function refusePasswordUnderSso(db: Db, user: { id: string; email: string }): Promise<void> {
  const enforcing = await enforcingOrganization(db, user.email);
  if (enforcing && enforcing.ownerUserId !== user.id) throw ssoRequired();
}

/** Sign-up with an e-mail of an enforced domain: the account comes from SSO (just in time) instead. */
export async function refuseSignUpUnderSso(db: Db, email: string): Promise<void> {
  if (await enforcingOrganization(db, email)) throw ssoRequired();
}

/**
 * Invitation acceptance by such an e-mail needs a session opened through SSO, and through a
 * connection of the enforcing organization: its identity provider is the one that vouches for
 * its domains, so a session from another organization's connection does not count.
 */
export async function refuseAcceptOutsideSso(db: Db, email: string, session: { authMethod: string | null; ssoConnectionId: string | null }): Promise<void> {
  const enforcing = await enforcingOrganization(db, email);
  if (!enforcing) return;
  if (!(await madeThroughOwnConnection(db, enforcing.organizationId, session))) throw ssoRequired();
}

/** Whether a session was opened by an SSO sign-in through one of the organization's connections. */
async function madeThroughOwnConnection(db: Db, organizationId: string, session: { authMethod: string | null; ssoConnectionId: string | null }): Promise<boolean> {
  if (session.authMethod !== 'sso' || session.ssoConnectionId === null) return false;
  const own = await db.selectFrom('sso_connections').select('id').where('id', '=', session.ssoConnectionId).where('organization_id', '=', organizationId).executeTakeFirst();
  return own !== undefined;
}

export const organizationSsoRequired = () =>
  new Forbidden('sso_required', 'This organization requires single sign-on through its own identity provider: sign in through SSO (POST /v1/auth/sso/start).');

/**
 * Switching a session into an organization that enforces SSO: only a session made through one of
 * its own connections, or a session of its owner (break-glass); else 403 `sso_required`.
 */
export async function refuseSwitchOutsideSso(
  db: Db,
  organizationId: string,
  session: { userId: string; authMethod: string | null; ssoConnectionId: string | null },
): Promise<void> {
  const row = await db
    .selectFrom('organizations as o')
    .leftJoin('members as m', (join) => join.onRef('m.organization_id', '=', 'o.id').on('m.user_id', '=', session.userId).on('m.removed_at', 'is', null))
    .select(['o.sso_enforced', 'm.role'])
    .where('o.id', '=', organizationId)
    .executeTakeFirst();
  if (!row?.sso_enforced || row.role === 'owner') return;
  if (!(await madeThroughOwnConnection(db, organizationId, session))) throw organizationSsoRequired();
}
