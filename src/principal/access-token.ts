import type { Db } from '../db/schema';
import type { Principal } from '../domain/principal';
import { Unauthorized } from '../lib/errors';
import { preparedAs } from '../db/connect';
import { permissionsOfRole } from '../access/role-permissions';
import { looksLikeJwt, verifyAccessToken, type AccessTokenClaims } from '../oauth/verify';
import { revokedKeyOf } from '../oauth/revocations';
import { apiResource, apiResourceMetadataUrl } from '../oauth/resources';
import { organizationUnlocked } from './organization-lock';
import { principalOfWorkerToken } from './worker-access-token';
import { accessTokenPrincipal } from './token-principal';

/**
 * An OAuth access token (docs/oauth.md#access-tokens-at-the-api) → the member it acts as, the
 * same Principal a session or API key becomes. The JWT is verified locally (signature, issuer,
 * audience `/v1`, expiry); then one query reads what may have changed since it was issued: the
 * member still active (not removed or suspended), its service account enabled, the client still
 * there (the service account itself, or the organization client), the token not revoked, the
 * member's authorization it was issued under not revoked, and the role's permissions now. What it may do on this request is its scope ∩ the member's permissions
 * now ∩ the client's allowed scopes now (an outside client's: the organization's `maxScopes`).
 *
 * Refusals of a token are 401 with `WWW-Authenticate: Bearer error="invalid_token"` and the
 * resource's metadata URL (RFC 6750 §3, RFC 9728 §5.1), so an OAuth client knows to get a new one.
 */
export class InvalidAccessToken extends Unauthorized {
  constructor(private readonly resourceMetadata: string) {
    super('The access token is expired, revoked, or no longer valid for its member or client.');
  }
  override headers() {
    return { 'WWW-Authenticate': `Bearer error="invalid_token", resource_metadata="${this.resourceMetadata}"` };
  }
}

interface TokenRow {
  organizationId: string;
  memberId: string;
  role: string;
  userId: string | null;
  roleBuiltIn: boolean | null;
  rolePermissions: string[] | null;
  serviceAccountId: string | null;
  oauthClientId: string | null;
  oauthClientScopes: string[] | null;
  authorizationId: string | null;
  authorizationClientId: string | null;
  authorizationClientType: string | null;
  maxScopes: string[] | null;
  /** A delegated token's actor (`act.sub`): the worker, while it runs and its creator is active, with its ceiling and the creator's role. */
  actorWorkerId: string | null;
  actorCeiling: string[] | null;
  actorCreatorRole: string | null;
  actorCreatorRoleBuiltIn: boolean | null;
  actorCreatorRolePermissions: string[] | null;
}

/** The one statement of a token's request (test/api/principal-round-trips.test.ts counts it). */
function tokenState(db: Db, claims: AccessTokenClaims, now: Date): Promise<TokenRow | undefined> {
  return db
    .selectFrom('members as m')
    .modifyFront(preparedAs('access_token_principal'))
    .leftJoin('organization_roles as r', (join) => join.onRef('r.organization_id', '=', 'm.organization_id').onRef('r.key', '=', 'm.role'))
    .leftJoin('service_accounts as s', 's.member_id', 'm.id')
    .leftJoin('oauth_clients as c', (join) => join.on('c.id', '=', claims.client_id).onRef('c.organization_id', '=', 'm.organization_id'))
    // The member's authorization the token was issued under, while live (revoking it ends the token here).
    .leftJoin('oauth_authorizations as a', (join) =>
      join.on('a.id', '=', claims.authorization_id ?? '').onRef('a.member_id', '=', 'm.id').on('a.revoked_at', 'is', null).on('a.expires_at', '>', now),
    )
    .leftJoin('organization_oauth_policies as p', 'p.organization_id', 'm.organization_id')
    // A token a worker exchanged for the member: the worker (running, of the organization) and its creator (active) now.
    .leftJoin('workers as w', (join) => join.on('w.id', '=', claims.act?.sub ?? '').onRef('w.organization_id', '=', 'm.organization_id').on('w.stopped_at', 'is', null))
    .leftJoin('members as wc', (join) => join.onRef('wc.id', '=', 'w.created_by_member_id').on('wc.removed_at', 'is', null).on('wc.suspended_at', 'is', null))
    .leftJoin('organization_roles as wr', (join) => join.onRef('wr.organization_id', '=', 'wc.organization_id').onRef('wr.key', '=', 'wc.role'))
    .select([
      'm.organization_id as organizationId',
      'm.id as memberId',
      'm.role as role',
      'm.user_id as userId',
      'r.built_in as roleBuiltIn',
      'r.permissions as rolePermissions',
      's.id as serviceAccountId',
      'c.id as oauthClientId',
      'c.scopes as oauthClientScopes',
      'a.id as authorizationId',
      'a.client_id as authorizationClientId',
      'a.client_type as authorizationClientType',
      'p.max_scopes as maxScopes',
      'w.id as actorWorkerId',
      'w.ceiling as actorCeiling',
      'wc.role as actorCreatorRole',
      'wr.built_in as actorCreatorRoleBuiltIn',
      'wr.permissions as actorCreatorRolePermissions',
    ])
    .where('m.id', '=', claims.sub)
    .where('m.organization_id', '=', claims.org_id)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    // Null for a person (no account row).
    .where('s.disabled_at', 'is', null)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('oauth_records as x').select('x.id').where('x.id', '=', revokedKeyOf(claims.jti)))))
    .where(organizationUnlocked('m.organization_id'))
    .executeTakeFirst();
}

/**
 * The principal of a token whose claims verified, or null when what it names no longer holds.
 * Used by the `/v1` scheme below and by introspection (src/oauth/structured-tokens.ts).
 */
export async function principalFromClaims(db: Db, claims: AccessTokenClaims, now: Date): Promise<Principal | null> {
  // A worker's own token names no member (docs/workers-and-usage.md#workers-as-oauth-clients).
  if (claims.sub.startsWith('wrk_')) return principalOfWorkerToken(db, claims);
  const row = await tokenState(db, claims, now);
  if (!row) return null;
  const serviceAccountClient = row.serviceAccountId !== null && claims.client_id === row.serviceAccountId && claims.authorization_id === undefined;
  // A member's token (authorization code, device flow) holds while its authorization does, for the client it names.
  const authorized = claims.authorization_id !== undefined && row.authorizationId === claims.authorization_id && row.authorizationClientId === claims.client_id;
  if (claims.act !== undefined) return delegated(row, claims, authorized);
  const organizationClient = authorized && row.oauthClientId !== null && claims.client_id === row.oauthClientId;
  const outsideClient = authorized && (row.authorizationClientType === 'metadata_document' || row.authorizationClientType === 'dynamic');
  if (!serviceAccountClient && !organizationClient && !outsideClient) return null;
  // A service account's allowed scopes are its role's permissions (applied below); an organization
  // client's are its registered scopes now; an outside client's, the organization's maxScopes now.
  const allowedByClient = serviceAccountClient ? null : organizationClient ? new Set(row.oauthClientScopes ?? []) : row.maxScopes ? new Set(row.maxScopes) : null;
  const rolePermissions = permissionsOfRole({ key: row.role, builtIn: row.roleBuiltIn ?? false, permissions: row.rolePermissions });
  const permissions = new Set(claims.scope.filter((key) => rolePermissions.has(key) && (allowedByClient === null || allowedByClient.has(key))));
  return tokenPrincipal(row, claims, permissions);
}

/**
 * A token a worker exchanged for the member (docs/workers-and-usage.md#delegations-and-token-exchange):
 * it holds while the delegation (its authorization, of this member and this worker) is live, the
 * worker runs and its creator is active; it may do its scope ∩ the member's permissions now ∩ the
 * worker's ceiling now ∩ the creator's permissions now.
 */
function delegated(row: TokenRow, claims: AccessTokenClaims, authorized: boolean): Principal | null {
  const actor = claims.act!.sub;
  if (!authorized || row.authorizationClientType !== 'worker' || actor !== claims.client_id || row.actorWorkerId !== actor || row.actorCreatorRole === null) return null;
  const member = permissionsOfRole({ key: row.role, builtIn: row.roleBuiltIn ?? false, permissions: row.rolePermissions });
  const creator = permissionsOfRole({ key: row.actorCreatorRole, builtIn: row.actorCreatorRoleBuiltIn ?? false, permissions: row.actorCreatorRolePermissions });
  const ceiling = new Set(row.actorCeiling ?? []);
  const permissions = new Set(claims.scope.filter((key) => member.has(key) && ceiling.has(key) && creator.has(key)));
  return { ...tokenPrincipal(row, claims, permissions), worker: { id: actor, delegated: true } };
}

function tokenPrincipal(row: TokenRow, claims: AccessTokenClaims, permissions: Set<string>): Principal {
  return accessTokenPrincipal({ userId: row.userId, serviceAccountId: row.serviceAccountId, clientId: claims.client_id, organizationId: row.organizationId, memberId: row.memberId, role: row.role, permissions });
}

/**
 * The `oauthAccessToken` scheme: null (not this scheme) for a bearer value that is no JWT, so a
 * session token costs this resolver nothing; a JWT that fails any check throws InvalidAccessToken
 * (the router answers a scheme's own 401 with its header).
 */
export async function principalFromAccessToken(db: Db, token: string, now: Date, publicBaseUrl: string): Promise<Principal | null> {
  if (!looksLikeJwt(token)) return null;
  const principal = await principalForResource(db, token, now, publicBaseUrl, apiResource(publicBaseUrl));
  if (!principal) throw new InvalidAccessToken(apiResourceMetadataUrl(publicBaseUrl));
  return principal;
}

/**
 * The principal of an access token issued for `resource` (its audience), by the same checks as
 * above; null for anything else (no JWT, another audience, expired, revoked, its member or client
 * gone). The MCP endpoint's tokens are read with it (src/mcp-server/front.ts).
 */
export async function principalForResource(db: Db, token: string, now: Date, publicBaseUrl: string, resource: string): Promise<Principal | null> {
  const claims = await verifyAccessToken(db, token, now, { issuer: publicBaseUrl, audience: resource });
  return claims ? principalFromClaims(db, claims, now) : null;
}
