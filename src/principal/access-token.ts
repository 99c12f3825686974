import { sql } from 'kysely';
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
import type { SessionPreload } from './session';

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
  /**
   * A delegated token's actor (`act.sub`): the worker, while it runs and its creator is active, with
   * its ceiling and the creator's role. Read only for a token with `act` (absent otherwise).
   */
  actorWorkerId?: string | null;
  actorCeiling?: string[] | null;
  actorCreatorRole?: string | null;
  actorCreatorRoleBuiltIn?: boolean | null;
  actorCreatorRolePermissions?: string[] | null;
}

/**
 * A delegated token's actor, joined only into the statement of a token with `act` (its own prepared
 * statement): a person's or a service account's token leaves out three relations it never reads
 * (Postgres opens and locks every relation a statement names; EXPLAIN ANALYZE of GET /v1/org's token
 * statement on bench scenario 16's data: execution 0.08 ms with them, 0.045 ms without).
 */
const ACTOR_COLUMNS = sql`, w.id AS "actorWorkerId", w.ceiling AS "actorCeiling", wc.role AS "actorCreatorRole",
      wr.built_in AS "actorCreatorRoleBuiltIn", wr.permissions AS "actorCreatorRolePermissions"`;
function actorJoins(actor: string) {
  return sql`-- A token a worker exchanged for the member: the worker (running, of the organization) and its creator (active) now.
    LEFT JOIN workers w ON w.id = ${actor} AND w.organization_id = m.organization_id AND w.stopped_at IS NULL
    LEFT JOIN members wc ON wc.id = w.created_by_member_id AND wc.removed_at IS NULL AND wc.suspended_at IS NULL
    LEFT JOIN organization_roles wr ON wr.organization_id = wc.organization_id AND wr.key = wc.role`;
}

/**
 * Data an operation reads in the same round trip as its token check (GET /v1/org): extra columns
 * and joins added to the one token statement, as a session preload adds them to the session's
 * (./session.ts). They may use `m` (the member the token acts as) and `sa` (its service account,
 * null for a person).
 */
export type AccessTokenPreload<T> = SessionPreload<T>;

/**
 * The one statement of a token's request (test/api/principal-round-trips.test.ts counts it),
 * written as SQL (no query builder on the hot path), with a preload's columns and joins when one is given.
 */
async function tokenState(db: Db, claims: AccessTokenClaims, now: Date, preload?: AccessTokenPreload<unknown>): Promise<(TokenRow & Record<string, unknown>) | undefined> {
  const actor = claims.act?.sub;
  const name = `${preload ? `token_${preload.name}` : 'access_token_principal'}${actor === undefined ? '' : '_act'}`;
  const result = await sql<TokenRow & Record<string, unknown>>`${preparedAs(name)}
    SELECT m.organization_id AS "organizationId", m.id AS "memberId", m.role AS "role", m.user_id AS "userId",
      r.built_in AS "roleBuiltIn", r.permissions AS "rolePermissions", sa.id AS "serviceAccountId",
      c.id AS "oauthClientId", c.scopes AS "oauthClientScopes",
      a.id AS "authorizationId", a.client_id AS "authorizationClientId", a.client_type AS "authorizationClientType",
      p.max_scopes AS "maxScopes" ${actor === undefined ? sql`` : ACTOR_COLUMNS} ${preload ? sql`, ${preload.columns}` : sql``}
    FROM members m
    LEFT JOIN organization_roles r ON r.organization_id = m.organization_id AND r.key = m.role
    LEFT JOIN service_accounts sa ON sa.member_id = m.id
    LEFT JOIN oauth_clients c ON c.id = ${claims.client_id} AND c.organization_id = m.organization_id
    -- The member's authorization the token was issued under, while live (revoking it ends the token here).
    LEFT JOIN oauth_authorizations a ON a.id = ${claims.authorization_id ?? ''} AND a.member_id = m.id AND a.revoked_at IS NULL AND a.expires_at > ${now}
    LEFT JOIN organization_oauth_policies p ON p.organization_id = m.organization_id
    ${actor === undefined ? sql`` : actorJoins(actor)}
    ${preload ? preload.joins : sql``}
    WHERE m.id = ${claims.sub} AND m.organization_id = ${claims.org_id} AND m.removed_at IS NULL AND m.suspended_at IS NULL
      -- Null for a person (no account row).
      AND sa.disabled_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM oauth_records x WHERE x.id = ${revokedKeyOf(claims.jti)})
      AND ${organizationUnlocked('m.organization_id')}`.execute(db);
  return result.rows[0];
}

/**
 * The principal of a token whose claims verified, or null when what it names no longer holds.
 * Used by the `/v1` scheme below and by introspection (src/oauth/structured-tokens.ts).
 */
export async function principalFromClaims(db: Db, claims: AccessTokenClaims, now: Date): Promise<Principal | null> {
  return (await principalAndPreload(db, claims, now)).principal;
}

/** The same, with an operation's data read in the same statement (none for a worker's own token, which names no member). */
async function principalAndPreload<T>(db: Db, claims: AccessTokenClaims, now: Date, preload?: AccessTokenPreload<T>): Promise<{ principal: Principal | null; preloaded?: T }> {
  // A worker's own token names no member (docs/workers-and-usage.md#workers-as-oauth-clients).
  if (claims.sub.startsWith('wrk_')) return { principal: await principalOfWorkerToken(db, claims) };
  const row = await tokenState(db, claims, now, preload);
  if (!row) return { principal: null };
  const principal = principalOfRow(row, claims);
  return principal && preload ? { principal, preloaded: preload.read(row) } : { principal };
}

function principalOfRow(row: TokenRow, claims: AccessTokenClaims): Principal | null {
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
  if (!authorized || row.authorizationClientType !== 'worker' || actor !== claims.client_id || row.actorWorkerId !== actor || !row.actorCreatorRole) return null;
  const member = permissionsOfRole({ key: row.role, builtIn: row.roleBuiltIn ?? false, permissions: row.rolePermissions });
  const creator = permissionsOfRole({ key: row.actorCreatorRole, builtIn: row.actorCreatorRoleBuiltIn ?? false, permissions: row.actorCreatorRolePermissions ?? null });
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

/** The same check, with an operation's data read in the same statement (an access-token loader, src/contract `AccessTokenLoaders`). */
export async function principalFromAccessTokenWith<T>(
  db: Db,
  token: string,
  now: Date,
  publicBaseUrl: string,
  preload: AccessTokenPreload<T>,
): Promise<{ principal: Principal; preloaded: T | undefined } | null> {
  if (!looksLikeJwt(token)) return null;
  const claims = await verifyAccessToken(db, token, now, { issuer: publicBaseUrl, audience: apiResource(publicBaseUrl) });
  const found = claims ? await principalAndPreload(db, claims, now, preload) : { principal: null };
  if (!found.principal) throw new InvalidAccessToken(apiResourceMetadataUrl(publicBaseUrl));
  return { principal: found.principal, preloaded: found.preloaded };
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
