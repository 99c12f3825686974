import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import { positioned, type PageRequest } from '../lib/pagination';
import { isPermission } from '../access/permissions';
import { changed, created, deleted, recordChange } from '../audit';
import { OFFLINE_ACCESS } from '../oauth/resources';
import { revokeAllOfClient } from '../authorizations/service';
import * as store from './store';
import type { OAuthClientRow } from './store';

/**
 * An organization's own OAuth clients (docs/oauth.md#organization-clients), `/v1/oauth-clients`.
 * The authorization server finds them through its one client lookup (src/oauth/clients.ts), which
 * reads this table on every request that names a client, so a change here holds from the next
 * request: a deleted client cannot authenticate, and the API's token check
 * (src/principal/access-token.ts) joins the client, so its access tokens answer 401.
 *
 * A confidential client's secret is `cpo_` + 256 random bits, shown once, stored as its SHA-256
 * (a random 256-bit value needs no slow hash: nothing can be guessed). The registered scopes are a
 * ceiling, not a grant: a token still does only what its member may do on each request, so a
 * client may list keys its registrar lacks (an admin registers a client owners will authorize).
 */
const SECRET_PREFIX = 'cpo';

type OAuthClient = components['schemas']['OrganizationOAuthClient'];

export const oauthClientNotFound = () => new NotFound('oauth_client_not_found', 'The OAuth client could not be found.');

export function toOAuthClient(row: OAuthClientRow): OAuthClient {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    redirectUris: row.redirect_uris,
    scopes: row.scopes,
    logoUrl: row.logo_url,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    createdBy: { memberId: row.created_by_member_id },
  };
}

/** Scopes the authorization server offers: catalogue keys and offline_access (else 400 naming the index). */
function requireKnownScopes(scopes: readonly string[]): void {
  scopes.forEach((scope, index) => {
    if (scope !== OFFLINE_ACCESS && !isPermission(scope)) throw Invalid.at(['body', 'scopes', String(index)], `unknown scope ${scope} (a key of GET /v1/permissions, or offline_access)`);
  });
}

/**
 * The contract's pattern admits https URLs and loopback http ones; this adds what a pattern
 * cannot say: the URL parses (WHATWG, as the authorization server will compare it), carries no
 * user or password (a phishing look-alike), and an https one names a host.
 */
function requireRedirectUris(uris: readonly string[]): void {
  uris.forEach((uri, index) => {
    let url: URL | undefined;
    try {
      url = new URL(uri);
    } catch {
      url = undefined;
    }
    if (!url || !url.hostname || url.username || url.password || url.hash) {
      throw Invalid.at(['body', 'redirectUris', String(index)], 'must be an absolute URL with a host and no user, password or fragment');
    }
  });
}

export async function createOAuthClient(
  deps: AppDeps,
  membership: Membership,
  input: { name: string; type: 'public' | 'confidential'; redirectUris: string[]; scopes: string[]; logoUrl?: string },
): Promise<{ item: OAuthClient; clientSecret?: string }> {
  requireRedirectUris(input.redirectUris);
  requireKnownScopes(input.scopes);
  const now = deps.clock.now();
  const clientSecret = input.type === 'confidential' ? randomSecret(SECRET_PREFIX) : undefined;
  const row: OAuthClientRow = {
    id: newId('oauthClient'),
    name: input.name,
    type: input.type,
    redirect_uris: input.redirectUris,
    scopes: input.scopes,
    logo_url: input.logoUrl ?? null,
    created_by_member_id: membership.memberId,
    created_at: now,
    updated_at: now,
  };
  await deps.db.transaction().execute(async (trx) => {
    await store.insertClient(trx, membership.organizationId, row, clientSecret ? sha256Hex(clientSecret) : null);
    await recordChange(trx, deps.audit, {
      action: 'oauth_client.created',
      target: { type: 'oauth_client', id: row.id },
      changes: created({ name: row.name, type: row.type, redirectUris: row.redirect_uris, scopes: row.scopes, logoUrl: row.logo_url }),
    });
  });
  return { item: toOAuthClient(row), ...(clientSecret ? { clientSecret } : {}) };
}

export async function getOAuthClient(deps: AppDeps, membership: Membership, id: string): Promise<OAuthClient> {
  const row = await store.findClient(deps.db, membership.organizationId, id);
  if (!row) throw oauthClientNotFound();
  return toOAuthClient(row);
}

export async function listOAuthClients(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'oauth-clients',
    page,
    async (after, take) => positioned(await store.listClients(deps.db, membership.organizationId, after, take)),
    (row) => toOAuthClient(row),
  );
}

/** Name, redirect URIs, scopes, logo; the type and the secret stay (a new type is a new client). */
export async function updateOAuthClient(
  deps: AppDeps,
  membership: Membership,
  id: string,
  input: { name?: string; redirectUris?: string[]; scopes?: string[]; logoUrl?: string | null },
): Promise<OAuthClient> {
  if (input.redirectUris) requireRedirectUris(input.redirectUris);
  if (input.scopes) requireKnownScopes(input.scopes);
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const before = await store.lockClient(trx, membership.organizationId, id);
    if (!before) throw oauthClientNotFound();
    await store.updateClient(trx, membership.organizationId, id, input, now);
    const after: OAuthClientRow = {
      ...before,
      name: input.name ?? before.name,
      redirect_uris: input.redirectUris ?? before.redirect_uris,
      scopes: input.scopes ?? before.scopes,
      logo_url: input.logoUrl !== undefined ? input.logoUrl : before.logo_url,
      updated_at: now,
    };
    const shown = (row: OAuthClientRow) => ({ name: row.name, redirectUris: row.redirect_uris, scopes: row.scopes, logoUrl: row.logo_url });
    await recordChange(trx, deps.audit, { action: 'oauth_client.updated', target: { type: 'oauth_client', id }, changes: changed(shown(before), shown(after)) });
    return toOAuthClient(after);
  });
}

/**
 * The row goes, and with it everything that holds the client: the authorization server's lookup
 * finds no client (no authentication, no refresh, no authorization), the API's one token
 * statement joins the client, so its access tokens answer 401 from the next request, and the
 * members' authorizations of it are revoked with their grants' records (src/authorizations).
 */
export async function deleteOAuthClient(deps: AppDeps, membership: Membership, id: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const row = await store.lockClient(trx, membership.organizationId, id);
    if (!row || !(await store.deleteClient(trx, membership.organizationId, id))) throw oauthClientNotFound();
    const authorizationsRevoked = await revokeAllOfClient(trx, membership.organizationId, id, deps.clock.now());
    await recordChange(trx, deps.audit, {
      action: 'oauth_client.deleted',
      target: { type: 'oauth_client', id },
      changes: deleted({ name: row.name, type: row.type, authorizationsRevoked }),
    });
  });
}
