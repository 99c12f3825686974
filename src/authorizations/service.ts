import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import type { Db } from '../db/schema';
import { recordChange, systemContext } from '../audit';
import { userIdOf } from '../access/roles';
import { requireKnownPermissions, sortedPermissions } from '../access/role-permissions';
import { NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { positioned, type PageRequest } from '../lib/pagination';
import { destroyGrantRecords } from '../oauth/records';
import * as store from './store';
import type { AuthorizationRow, OAuthPolicy } from './store';
import type { AuthorizationClientType } from './tables';

export type { OAuthPolicy } from './store';

/**
 * Members' authorizations of OAuth clients (docs/oauth.md#authorizations): what a member approved
 * on the consent page (or the device page), listed to the member (`/v1/me/authorizations`, every
 * organization of theirs) and to the organization's admins (`/v1/oauth-authorizations`). Revoking
 * one sets `revoked_at` (the access tokens under it carry its id and fail on their next request,
 * src/principal/access-token.ts) and deletes the authorization server's records of its grant
 * (refresh tokens, codes), in one transaction.
 */
export function toAuthorization(row: AuthorizationRow) {
  return {
    id: row.id,
    client: { id: row.client_id, name: row.client_name, type: row.client_type },
    organizationId: row.organization_id,
    memberId: row.member_id,
    scopes: row.scopes,
    resource: row.resource,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
  };
}

export const authorizationNotFound = () => new NotFound('oauth_authorization_not_found', 'No live authorization with this id.');

export async function listMine(deps: AppDeps, principal: Principal, page: PageRequest) {
  const userId = userIdOf(principal);
  const now = deps.clock.now();
  return deps.cursors.page('me-authorizations', page, async (after, take) => positioned(await store.listOfUser(deps.db, userId, now, after, take)), (row) => toAuthorization(row));
}

export async function listOfOrganization(deps: AppDeps, membership: Membership, page: PageRequest) {
  const now = deps.clock.now();
  return deps.cursors.page('oauth-authorizations', page, async (after, take) => positioned(await store.listOfOrganization(deps.db, membership.organizationId, now, after, take)), (row) => toAuthorization(row));
}

/** Ends the grant's refresh tokens, codes and the grant itself (the authorization server's records). */
async function endGrant(db: Db, row: AuthorizationRow): Promise<void> {
  if (row.grant_key) await destroyGrantRecords(db, row.grant_key);
}

/**
 * A deleted organization client's authorizations end with it, in the deletion's transaction: they
 * leave every member's list and their grants' records (refresh tokens) go. The count, for the
 * deletion's one audit entry.
 */
export async function revokeAllOfClient(trx: Db, organizationId: string, clientId: string, now: Date): Promise<number> {
  const rows = await store.revokeOfClient(trx, organizationId, clientId, now);
  for (const row of rows) await endGrant(trx, row);
  return rows.length;
}

const revokedChanges = (row: AuthorizationRow) => ({ clientId: { from: row.client_id, to: null }, memberId: { from: row.member_id, to: null } });

/** The caller's own authorization, in any organization of theirs; another's (or none live) is 404. */
export async function revokeMine(deps: AppDeps, principal: Principal, id: string): Promise<void> {
  const userId = userIdOf(principal);
  await deps.db.transaction().execute(async (trx) => {
    const row = await store.revoke(trx, id, { userId }, deps.clock.now());
    if (!row) throw authorizationNotFound();
    await endGrant(trx, row);
    await recordChange(trx, deps.audit, {
      organizationId: row.organization_id,
      actor: { type: 'member', id: userId, memberId: row.member_id },
      action: 'oauth_authorization.revoked',
      target: { type: 'oauth_authorization', id: row.id },
      changes: revokedChanges(row),
    });
  });
}

/** An admin revokes one of the organization's authorizations (`oauthClients.manage`). */
export async function revokeInOrganization(deps: AppDeps, membership: Membership, id: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const row = await store.revoke(trx, id, { organizationId: membership.organizationId }, deps.clock.now());
    if (!row) throw authorizationNotFound();
    await endGrant(trx, row);
    await recordChange(trx, deps.audit, { organizationId: row.organization_id, action: 'oauth_authorization.revoked', target: { type: 'oauth_authorization', id: row.id }, changes: revokedChanges(row) });
  });
}

export async function getPolicy(deps: AppDeps, membership: Membership): Promise<OAuthPolicy> {
  return store.findPolicy(deps.db, membership.organizationId);
}

/** Read at the authorization step (which outside clients the organization admits). */
export function policyOf(db: Db, organizationId: string): Promise<OAuthPolicy> {
  return store.findPolicy(db, organizationId);
}

/** Sets the policy; a change writes one audit entry naming the fields that changed. */
export async function putPolicy(deps: AppDeps, membership: Membership, input: OAuthPolicy): Promise<OAuthPolicy> {
  const { organizationId } = membership;
  if (input.maxScopes !== null) requireKnownPermissions(input.maxScopes, ['body', 'maxScopes']);
  const next: OAuthPolicy = {
    thirdPartyClients: input.thirdPartyClients,
    allowList: [...new Set(input.allowList)],
    maxScopes: input.maxScopes === null ? null : sortedPermissions(input.maxScopes),
  };
  await deps.db.transaction().execute(async (trx) => {
    const before = await store.findPolicy(trx, organizationId);
    await store.putPolicy(trx, organizationId, next, deps.clock.now());
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    if (before.thirdPartyClients !== next.thirdPartyClients) changes.thirdPartyClients = { from: before.thirdPartyClients, to: next.thirdPartyClients };
    if (JSON.stringify(before.allowList) !== JSON.stringify(next.allowList)) changes.allowList = { from: before.allowList, to: next.allowList };
    if (JSON.stringify(before.maxScopes) !== JSON.stringify(next.maxScopes)) changes.maxScopes = { from: before.maxScopes, to: next.maxScopes };
    await recordChange(trx, deps.audit, { organizationId, action: 'organization.oauth_policy_updated', target: { type: 'organization', id: organizationId }, changes });
  });
  return next;
}

// ---- Consent (the authorization server's consent and device pages) --------------------------------

export interface ConsentClient {
  clientId: string;
  type: AuthorizationClientType;
  name: string;
  /** An organization client's organization: only its members may authorize it. */
  organizationId: string | null;
}

export interface OrganizationChoice {
  organizationId: string;
  name: string;
  memberId: string;
  /** Why the member cannot authorize the client for this organization, or null when they can. */
  refused: string | null;
}

/**
 * The organizations a signed-in person may authorize the client for, each with the reason it is
 * refused (shown on the consent page): the organization client's own organization only; an outside
 * client as the organization's oauth-policy admits; and every sign-in rule a session meets in that
 * organization (docs/accounts.md, docs/second-factors.md, docs/sso.md): its required second factor
 * proven at this sign-in, its SSO enforcement (a hosted sign-in is a password sign-in).
 */
export async function organizationChoices(deps: AppDeps, userId: string, client: ConsentClient, secondFactorProven: boolean): Promise<OrganizationChoice[]> {
  const rows = await store.organizationsOfUser(deps.db, userId);
  const choices: OrganizationChoice[] = [];
  for (const row of rows) {
    if (client.organizationId !== null && row.organizationId !== client.organizationId) continue;
    let refused: string | null = null;
    if (client.type !== 'organization') {
      const policy = await store.findPolicy(deps.db, row.organizationId);
      if (policy.thirdPartyClients === 'deny' || (policy.thirdPartyClients === 'allowList' && !policy.allowList.includes(client.clientId))) {
        refused = 'Its administrators do not allow this application.';
      }
    }
    if (!refused && row.role !== 'owner' && row.ssoEnforced) refused = 'It requires single sign-on through its identity provider.';
    if (!refused && row.requireMfa && !secondFactorProven) refused = 'It requires a second factor, and you signed in without one.';
    choices.push({ organizationId: row.organizationId, name: row.name, memberId: row.memberId, refused });
  }
  return choices;
}

/** Whether the account may authorize anything now (EMAIL_VERIFICATION `required`: its address confirmed). */
export async function mayAuthorize(deps: AppDeps, userId: string): Promise<boolean> {
  const user = await store.userState(deps.db, userId);
  if (!user) return false;
  return deps.settings.emailVerification !== 'required' || user.emailVerifiedAt !== null;
}

/**
 * Records an approval: a new authorization, or the member's live one for this client and resource
 * extended (the scopes joined, the new grant linked). Audited as `oauth_authorization.created` or
 * `.extended` in the organization, acted by the member.
 */
export async function recordConsent(
  deps: AppDeps,
  input: { userId: string; organizationId: string; memberId: string; client: ConsentClient; scopes: string[]; resource: string; grantKey: string },
): Promise<AuthorizationRow> {
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.settings.oauth.refreshTokenTtlSeconds * 1000);
  return deps.db.transaction().execute(async (trx) => {
    const existing = await store.findLive(trx, { memberId: input.memberId, clientId: input.client.clientId, resource: input.resource }, now);
    const actor = { type: 'member' as const, id: input.userId, memberId: input.memberId };
    if (existing) {
      const scopes = [...new Set([...existing.scopes, ...input.scopes])];
      const row = await store.extend(trx, existing.id, { scopes, clientName: input.client.name, grantKey: input.grantKey, expiresAt }, now);
      if (existing.grant_key && existing.grant_key !== input.grantKey) await destroyGrantRecords(trx, existing.grant_key);
      await recordChange(trx, deps.audit, { organizationId: input.organizationId, actor, action: 'oauth_authorization.extended', target: { type: 'oauth_authorization', id: row.id }, changes: { scopes: { from: existing.scopes, to: scopes } } });
      return row;
    }
    const row = await store.insert(
      trx,
      { id: newId('oauthAuthorization'), organizationId: input.organizationId, memberId: input.memberId, clientId: input.client.clientId, clientType: input.client.type, clientName: input.client.name, scopes: input.scopes, resource: input.resource, grantKey: input.grantKey, expiresAt },
      now,
    );
    await recordChange(trx, deps.audit, {
      organizationId: input.organizationId,
      actor,
      action: 'oauth_authorization.created',
      target: { type: 'oauth_authorization', id: row.id },
      changes: { clientId: { from: null, to: input.client.clientId }, scopes: { from: null, to: input.scopes } },
    });
    return row;
  });
}

/** The live authorization of a grant, or undefined. */
export function findGrantAuthorization(deps: AppDeps, grantKey: string): Promise<AuthorizationRow | undefined> {
  return store.findLiveByGrant(deps.db, grantKey, deps.clock.now());
}

/** The live authorization of a grant, stamped as used (a token is being issued under it), or undefined. */
export async function useGrant(deps: AppDeps, grantKey: string): Promise<AuthorizationRow | undefined> {
  const now = deps.clock.now();
  return store.useLiveByGrant(deps.db, grantKey, now, new Date(now.getTime() + deps.settings.oauth.refreshTokenTtlSeconds * 1000));
}

/**
 * The authorization server ended a grant (a rotated refresh token or a used code presented again,
 * a refresh token revoked by its client): the authorization it belongs to is revoked with it,
 * audited by the system.
 */
export async function revokeForGrant(deps: AppDeps, grantKey: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const row = await store.revokeByGrant(trx, grantKey, deps.clock.now());
    if (!row) return;
    await destroyGrantRecords(trx, grantKey);
    await recordChange(trx, systemContext(deps.clock, row.organization_id), {
      organizationId: row.organization_id,
      action: 'oauth_authorization.revoked',
      target: { type: 'oauth_authorization', id: row.id },
      changes: { ...revokedChanges(row), reason: 'grant_ended' },
    });
  });
}
