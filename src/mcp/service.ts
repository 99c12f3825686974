import type { AppDeps } from '../domain/deps';
import type { Db } from '../db/schema';
import type { Membership } from '../domain/principal';
import { Invalid, NotFound, Upstream } from '../lib/errors';
import { authorize } from '../access/roles';
import { visibilityOf } from '../access/resource-roles';
import { MCP_CONNECTION } from '../grants/resources';
import { activeGrantsOf, replaceActiveGrants, type GrantRow, type GrantTarget } from '../grants/store';
import { newId } from '../lib/ids';
import * as accounts from '../connected-accounts/service';
import { requestToken, TokenEndpointError } from '../connected-accounts/oauth';
import { checkTenantUrl } from '../outbound';
import * as store from './store';
import { existingMemberIds } from '../members/store';
import { existingTeamIds } from '../teams/store';
import type { Access, ConnectionPatch, ConnectionRow } from './store';
import { changed, created, recordChange } from '../audit';

export const MCP_CALLBACK_PATH = '/v1/mcp-connections/oauth/callback';

const notFound = () => new NotFound('connection_not_found', 'The MCP connection could not be found.');

export interface McpConnection {
  id: string;
  organizationId: string;
  name: string;
  url: string;
  authType: 'none' | 'apikey' | 'oauth';
  credentialMode: 'shared' | 'per_member';
  hasApiKey: boolean;
  oauthClient: { authorizationUrl: string; tokenUrl: string; clientId: string; scopes: string[]; hasClientSecret: boolean } | null;
  access: Access;
  connectedForMe: boolean;
  createdByOrgMembershipId: string | null;
  createdAt: string;
  updatedAt: string;
}

function splitScopes(value: string): string[] {
  return value.split(' ').filter(Boolean);
}

/** A grant lets its targets use the connection; the shared grant shape keeps richer roles possible. */
const USE_ROLE = 'viewer';

type ConnectionGrant = GrantRow & { resource_id: string };

function toAccess(grants: ConnectionGrant[]): Access {
  return {
    orgWide: grants.some((g) => g.org_wide),
    memberIds: grants.flatMap((g) => (g.member_id ? [g.member_id] : [])),
    teamIds: grants.flatMap((g) => (g.team_id ? [g.team_id] : [])),
  };
}

function toConnection(row: ConnectionRow, grants: ConnectionGrant[]): McpConnection {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    url: row.url,
    authType: row.auth_type,
    credentialMode: row.credential_mode,
    hasApiKey: row.has_api_key,
    oauthClient:
      row.auth_type === 'oauth' && row.oauth_authorization_url && row.oauth_token_url && row.oauth_client_id
        ? {
            authorizationUrl: row.oauth_authorization_url,
            tokenUrl: row.oauth_token_url,
            clientId: row.oauth_client_id,
            scopes: splitScopes(row.oauth_scopes),
            hasClientSecret: row.has_client_secret,
          }
        : null,
    access: toAccess(grants.filter((g) => g.resource_id === row.id)),
    connectedForMe: row.connected_for_me,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function viewer(membership: Membership) {
  return { organizationId: membership.organizationId, memberId: membership.memberId, visibleToMemberId: visibilityOf(membership) };
}

function grantsOf(deps: AppDeps, organizationId: string, connectionIds: string[]): Promise<ConnectionGrant[]> {
  return activeGrantsOf(deps.db, MCP_CONNECTION, organizationId, connectionIds);
}

function targetsOf(access: Access): GrantTarget[] {
  return [
    ...(access.orgWide ? [{ orgWide: true as const }] : []),
    ...access.memberIds.map((memberId) => ({ memberId })),
    ...access.teamIds.map((teamId) => ({ teamId })),
  ];
}

function replaceGrants(trx: Db, input: { organizationId: string; connectionId: string; access: Access; byMemberId: string; now: Date }) {
  return replaceActiveGrants(trx, MCP_CONNECTION, {
    organizationId: input.organizationId,
    resourceId: input.connectionId,
    targets: targetsOf(input.access),
    role: USE_ROLE,
    byMemberId: input.byMemberId,
    now: input.now,
    newId: () => newId(MCP_CONNECTION.grantIdKind),
  });
}

async function itemOf(deps: AppDeps, membership: Membership, connectionId: string): Promise<McpConnection> {
  const row = await store.findConnection(deps.db, membership.organizationId, membership.memberId, connectionId);
  if (!row) throw notFound();
  return toConnection(row, await grantsOf(deps, membership.organizationId, [row.id]));
}

export interface AccessInput {
  orgWide?: boolean;
  memberIds?: string[];
  teamIds?: string[];
}

function normalizeAccess(access: AccessInput | undefined): Access {
  return { orgWide: access?.orgWide ?? false, memberIds: access?.memberIds ?? [], teamIds: access?.teamIds ?? [] };
}

async function checkAccessTargets(deps: AppDeps, organizationId: string, access: Access): Promise<void> {
  const [foundMembers, foundTeams] = await Promise.all([
    existingMemberIds(deps.db, organizationId, access.memberIds),
    existingTeamIds(deps.db, organizationId, access.teamIds),
  ]);
  const members = access.memberIds.filter((id) => !foundMembers.includes(id));
  const teams = access.teamIds.filter((id) => !foundTeams.includes(id));
  if (members.length > 0) throw new NotFound('member_not_found', `No member ${members[0]} in this organization.`);
  if (teams.length > 0) throw new NotFound('team_not_found', `No team ${teams[0]} in this organization.`);
}

export interface CreateInput {
  name: string;
  url: string;
  authType: 'none' | 'apikey' | 'oauth';
  credentialMode: 'shared' | 'per_member';
  apiKey?: string;
  oauthClient?: { authorizationUrl: string; tokenUrl: string; clientId: string; clientSecret?: string; scopes?: string[] };
  access?: AccessInput;
}

/** The combinations that make sense (see the spec's CreateMcpConnection). */
function checkShape(input: CreateInput): void {
  const { authType, credentialMode } = input;
  if (credentialMode === 'shared' && authType === 'oauth') {
    throw Invalid.at(['body', 'authType'], 'a shared connection takes authType none or apikey; use per_member for oauth');
  }
  if (credentialMode === 'per_member' && authType === 'none') {
    throw Invalid.at(['body', 'authType'], 'a per_member connection takes authType apikey or oauth');
  }
  const sharedKey = credentialMode === 'shared' && authType === 'apikey';
  if (sharedKey && input.apiKey === undefined) throw Invalid.at(['body', 'apiKey'], 'is required for a shared apikey connection');
  if (!sharedKey && input.apiKey !== undefined) throw Invalid.at(['body', 'apiKey'], 'only a shared apikey connection stores an apiKey');
  if (authType === 'oauth' && !input.oauthClient) throw Invalid.at(['body', 'oauthClient'], 'is required for an oauth connection');
  if (authType !== 'oauth' && input.oauthClient) throw Invalid.at(['body', 'oauthClient'], 'only an oauth connection takes oauthClient');
}

/** Every URL of a connection is the tenant's: checked against the egress policy when written. */
function checkUrls(deps: AppDeps, input: { url?: string; oauthClient?: { authorizationUrl?: string; tokenUrl?: string } }): void {
  if (input.url !== undefined) checkTenantUrl(deps.outbound.policy, input.url, ['body', 'url']);
  const oauth = input.oauthClient;
  if (oauth?.authorizationUrl !== undefined) checkTenantUrl(deps.outbound.policy, oauth.authorizationUrl, ['body', 'oauthClient', 'authorizationUrl']);
  if (oauth?.tokenUrl !== undefined) checkTenantUrl(deps.outbound.policy, oauth.tokenUrl, ['body', 'oauthClient', 'tokenUrl']);
}

export async function createConnection(deps: AppDeps, membership: Membership, input: CreateInput): Promise<McpConnection> {
  authorize(membership, 'mcpConnections.manage');
  checkUrls(deps, input);
  checkShape(input);
  const access = normalizeAccess(input.access);
  await checkAccessTargets(deps, membership.organizationId, access);
  const id = newId('mcpConnection');
  const now = deps.clock.now();
  const oauth = input.oauthClient;
  await deps.db.transaction().execute(async (trx) => {
    await store.insertConnection(trx, {
      id,
      organizationId: membership.organizationId,
      name: input.name,
      url: input.url,
      authType: input.authType,
      credentialMode: input.credentialMode,
      apiKeySealed: input.apiKey !== undefined ? accounts.seal(deps, input.apiKey) : null,
      oauth: oauth
        ? {
            authorizationUrl: oauth.authorizationUrl,
            tokenUrl: oauth.tokenUrl,
            clientId: oauth.clientId,
            clientSecretSealed: oauth.clientSecret !== undefined ? accounts.seal(deps, oauth.clientSecret) : null,
            scopes: (oauth.scopes ?? []).join(' '),
          }
        : null,
      createdByMemberId: membership.memberId,
      now,
    });
    await replaceGrants(trx, { organizationId: membership.organizationId, connectionId: id, access, byMemberId: membership.memberId, now });
    await recordChange(trx, {
      action: 'mcp_connection.created',
      target: { type: 'mcp_connection', id },
      changes: created({ name: input.name, url: input.url, authType: input.authType, credentialMode: input.credentialMode, apiKey: input.apiKey, oauthClient: input.oauthClient, access }),
    });
  });
  return itemOf(deps, membership, id);
}

export async function listConnections(deps: AppDeps, membership: Membership, page: { limit?: number; cursor?: string }) {
  const result = await deps.cursors.page(
    'mcp-connections',
    page,
    (after, take) => store.listUsableConnections(deps.db, viewer(membership), after, take),
    (row) => row,
  );
  const grants = await grantsOf(deps, membership.organizationId, result.items.map((r) => r.id));
  return { items: result.items.map((row) => toConnection(row, grants)), nextCursor: result.nextCursor };
}

export async function getConnection(deps: AppDeps, membership: Membership, connectionId: string): Promise<McpConnection> {
  const row = await store.findUsableConnection(deps.db, viewer(membership), connectionId);
  if (!row) throw notFound();
  return toConnection(row, await grantsOf(deps, membership.organizationId, [row.id]));
}

export interface UpdateInput {
  name?: string;
  url?: string;
  apiKey?: string;
  oauthClient?: { authorizationUrl?: string; tokenUrl?: string; clientId?: string; clientSecret?: string; scopes?: string[] };
  access?: AccessInput;
}

export async function updateConnection(deps: AppDeps, membership: Membership, connectionId: string, input: UpdateInput): Promise<McpConnection> {
  authorize(membership, 'mcpConnections.manage');
  checkUrls(deps, input);
  const current = await store.findConnection(deps.db, membership.organizationId, membership.memberId, connectionId);
  if (!current) throw notFound();
  if (input.apiKey !== undefined && !(current.credential_mode === 'shared' && current.auth_type === 'apikey')) {
    throw Invalid.at(['body', 'apiKey'], 'only a shared apikey connection stores an apiKey');
  }
  if (input.oauthClient && current.auth_type !== 'oauth') throw Invalid.at(['body', 'oauthClient'], 'only an oauth connection takes oauthClient');
  const access = input.access ? normalizeAccess(input.access) : null;
  if (access) await checkAccessTargets(deps, membership.organizationId, access);
  const patch: ConnectionPatch = {};
  if (input.name !== undefined) patch.name = input.name;
  if (input.url !== undefined) patch.url = input.url;
  if (input.apiKey !== undefined) patch.api_key_sealed = accounts.seal(deps, input.apiKey);
  const oauth = input.oauthClient;
  if (oauth?.authorizationUrl !== undefined) patch.oauth_authorization_url = oauth.authorizationUrl;
  if (oauth?.tokenUrl !== undefined) patch.oauth_token_url = oauth.tokenUrl;
  if (oauth?.clientId !== undefined) patch.oauth_client_id = oauth.clientId;
  if (oauth?.clientSecret !== undefined) patch.oauth_client_secret_sealed = accounts.seal(deps, oauth.clientSecret);
  if (oauth?.scopes !== undefined) patch.oauth_scopes = oauth.scopes.join(' ');
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.updateConnection(trx, membership.organizationId, connectionId, patch, now))) throw notFound();
    if (access) await replaceGrants(trx, { organizationId: membership.organizationId, connectionId, access, byMemberId: membership.memberId, now });
    const before = { name: current.name, url: current.url };
    await recordChange(trx, {
      action: 'mcp_connection.updated',
      target: { type: 'mcp_connection', id: connectionId },
      changes: { ...changed(before, { name: input.name, url: input.url }), ...created({ apiKey: input.apiKey, oauthClient: input.oauthClient, access: access ?? undefined }) },
    });
  });
  return itemOf(deps, membership, connectionId);
}

export async function deleteConnection(deps: AppDeps, membership: Membership, connectionId: string): Promise<void> {
  authorize(membership, 'mcpConnections.manage');
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.deleteConnection(trx, membership.organizationId, connectionId))) throw notFound();
    await recordChange(trx, { action: 'mcp_connection.deleted', target: { type: 'mcp_connection', id: connectionId } });
  });
}

function target(membership: Membership, connectionId: string): accounts.AccountTarget {
  return { organizationId: membership.organizationId, memberId: membership.memberId, provider: 'mcp', connectionId };
}

const notThisKind = (what: string) => Invalid.at(['path', 'connectionId'], `the connection is not a per_member ${what} connection`);

export async function setMyCredential(deps: AppDeps, membership: Membership, connectionId: string, apiKey: string): Promise<{ connectedAt: string }> {
  const row = await store.findUsableConnection(deps.db, viewer(membership), connectionId);
  if (!row) throw notFound();
  if (row.credential_mode !== 'per_member' || row.auth_type !== 'apikey') throw notThisKind('apikey');
  const account = await accounts.storeApiKeyAccount(deps, target(membership, connectionId), apiKey);
  return { connectedAt: account.created_at.toISOString() };
}

function callbackUrl(deps: AppDeps): string {
  return `${deps.settings.publicBaseUrl}${MCP_CALLBACK_PATH}`;
}

export async function startConnect(deps: AppDeps, membership: Membership, connectionId: string): Promise<string> {
  const row = await store.findUsableConnection(deps.db, viewer(membership), connectionId);
  if (!row) throw notFound();
  if (row.credential_mode !== 'per_member' || row.auth_type !== 'oauth' || !row.oauth_authorization_url || !row.oauth_client_id) {
    throw notThisKind('oauth');
  }
  return accounts.startAuthorization(deps, {
    target: target(membership, connectionId),
    endpoint: row.oauth_authorization_url,
    clientId: row.oauth_client_id,
    scopes: splitScopes(row.oauth_scopes),
    redirectUri: callbackUrl(deps),
  });
}

function issuerOf(iss: string, authorizationUrl: string | null): boolean {
  if (!authorizationUrl) return false;
  try {
    const issuer = new URL(iss);
    const endpoint = new URL(authorizationUrl);
    const base = issuer.pathname.replace(/\/+$/, '');
    return issuer.origin === endpoint.origin && !issuer.search && !issuer.hash && (base === '' || endpoint.pathname === base || endpoint.pathname.startsWith(`${base}/`));
  } catch {
    return false;
  }
}

/** The callback: consume the state, exchange the code at the connection's token URL, store. */
export async function completeOAuth(deps: AppDeps, query: accounts.CallbackQuery): Promise<void> {
  const pending = await accounts.takeAuthorization(deps, 'mcp', query);
  const { organizationId, connectionId } = pending.target;
  const client = connectionId ? await store.findOAuthClient(deps.db, organizationId, connectionId) : undefined;
  if (!client?.oauth_token_url || !client.oauth_client_id) throw Invalid.at(['query', 'state'], 'the connection of this sign-in no longer exists');
  // The connection stores no issuer: an RFC 9207 issuer is the authorization endpoint's origin
  // and a leading part of its path (https://as.example/tenant → https://as.example/tenant/authorize).
  const authorization = connectionId ? await store.findConnection(deps.db, organizationId, pending.target.memberId, connectionId) : undefined;
  accounts.checkIssuer(pending, (iss) => issuerOf(iss, authorization?.oauth_authorization_url ?? null));
  const params: Record<string, string> = {
    grant_type: 'authorization_code',
    code: pending.code,
    redirect_uri: pending.redirectUri,
    code_verifier: pending.codeVerifier,
    client_id: client.oauth_client_id,
  };
  if (client.oauth_client_secret_sealed) params.client_secret = accounts.unseal(deps, client.oauth_client_secret_sealed);
  let tokens;
  try {
    tokens = await requestToken(deps.outbound.request, {
      url: client.oauth_token_url,
      params,
      timeoutMs: deps.settings.mcpOAuthTimeoutMs,
      now: deps.clock.now(),
      requestedScopes: splitScopes(client.oauth_scopes),
    });
  } catch (err) {
    if (err instanceof TokenEndpointError) throw new Upstream('mcp_oauth_error', `Connecting failed: ${err.message}.`);
    throw err;
  }
  await accounts.storeAuthorizedAccount(deps, pending, {
    tokens,
    guard: async (trx) => {
      // The member must still be in the organization and the connection still per-member oauth.
      const still = await store.findConnection(trx, organizationId, pending.target.memberId, connectionId!);
      if (!still || still.credential_mode !== 'per_member' || still.auth_type !== 'oauth') {
        throw Invalid.at(['query', 'state'], 'the connection of this sign-in changed meanwhile');
      }
    },
  });
}

/**
 * Removes only the caller's account (and pending sign-ins) on a per-member connection, in one
 * transaction. The connection, its shared credential, grants, OAuth client and other members'
 * accounts are untouched.
 */
export async function disconnectMyAccount(deps: AppDeps, membership: Membership, connectionId: string): Promise<void> {
  const removed = await deps.db.transaction().execute(async (trx) => {
    const row = await store.findConnection(trx, membership.organizationId, membership.memberId, connectionId);
    if (!row) return 'not_found' as const;
    if (row.credential_mode === 'shared') return 'shared' as const;
    if (!(await accounts.disconnect(trx, target(membership, connectionId)))) return 'nothing' as const;
    await recordChange(trx, accounts.accountChange(target(membership, connectionId), 'account_disconnected'));
    return 'removed' as const;
  });
  if (removed === 'shared') throw Invalid.at(['path', 'connectionId'], 'a shared connection has no per-member account to disconnect');
  if (removed !== 'removed') throw notFound();
}
