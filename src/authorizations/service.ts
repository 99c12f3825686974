import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import type { Db } from '../db/schema';
import { recordChange } from '../audit';
import { userIdOf } from '../access/roles';
import { requireKnownPermissions, sortedPermissions } from '../access/role-permissions';
import { NotFound } from '../lib/errors';
import { positioned, type PageRequest } from '../lib/pagination';
import { destroyGrantRecords } from '../oauth/records';
import * as store from './store';
import type { AuthorizationRow, OAuthPolicy } from './store';

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
