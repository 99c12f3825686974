import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid } from '../lib/errors';
import { newId } from '../lib/ids';
import * as accounts from '../connected-accounts/service';
import { checkTenantUrl } from '../outbound';
import { changed, created, recordChange } from '../audit';
import * as store from './store';
import type { ConnectionPatch } from './store';
import { notFound, toConnection, viewer, type McpConnection } from './connection';
import { checkAccessTargets, grantsOf, normalizeAccess, replaceGrants, type AccessInput } from './access';
import { discover, resolveServer } from './authorization-server';

/** Connections themselves: create, list, get, update and delete (writes need mcpConnections.manage). */

interface OAuthClientInput {
  authorizationUrl?: string;
  tokenUrl?: string;
  issuer?: string;
  clientId?: string;
  clientSecret?: string;
  scopes?: string[];
}

export interface CreateInput {
  name: string;
  url: string;
  authType: 'none' | 'apikey' | 'oauth';
  credentialMode: 'shared' | 'per_member';
  apiKey?: string;
  oauthClient?: OAuthClientInput & { clientId: string };
  access?: AccessInput;
}

export interface UpdateInput {
  name?: string;
  url?: string;
  apiKey?: string;
  oauthClient?: OAuthClientInput;
  access?: AccessInput;
}

async function itemOf(deps: AppDeps, membership: Membership, connectionId: string): Promise<McpConnection> {
  const row = await store.findConnection(deps.db, membership.organizationId, membership.memberId, connectionId);
  if (!row) throw notFound();
  return toConnection(row, await grantsOf(deps, membership.organizationId, [row.id]));
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
function checkUrls(deps: AppDeps, input: { url?: string; oauthClient?: OAuthClientInput }): void {
  if (input.url !== undefined) checkTenantUrl(deps.outbound.policy, input.url, ['body', 'url']);
  const oauth = input.oauthClient;
  for (const field of ['authorizationUrl', 'tokenUrl', 'issuer'] as const) {
    const value = oauth?.[field];
    if (value !== undefined) checkTenantUrl(deps.outbound.policy, value, ['body', 'oauthClient', field]);
  }
}

export async function createConnection(deps: AppDeps, membership: Membership, input: CreateInput): Promise<McpConnection> {
  checkUrls(deps, input);
  checkShape(input);
  const access = normalizeAccess(input.access);
  await checkAccessTargets(deps, membership.organizationId, access);
  const oauth = input.oauthClient;
  // Metadata is read before the transaction: no row is locked while a tenant's server answers.
  const server = oauth ? await resolveServer(deps, oauth) : null;
  const id = newId('mcpConnection');
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await store.insertConnection(trx, {
      id,
      organizationId: membership.organizationId,
      name: input.name,
      url: input.url,
      authType: input.authType,
      credentialMode: input.credentialMode,
      apiKeySealed: input.apiKey !== undefined ? accounts.seal(deps, input.apiKey) : null,
      oauth:
        oauth && server
          ? {
              ...server,
              clientId: oauth.clientId,
              clientSecretSealed: oauth.clientSecret !== undefined ? accounts.seal(deps, oauth.clientSecret) : null,
              scopes: (oauth.scopes ?? []).join(' '),
            }
          : null,
      createdByMemberId: membership.memberId,
      now,
    });
    await replaceGrants(trx, { organizationId: membership.organizationId, connectionId: id, access, byMemberId: membership.memberId, now });
    await recordChange(trx, deps.audit, {
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

/**
 * The OAuth columns a patch changes. `issuer` alone reads the endpoints from its metadata again;
 * endpoints given by hand no longer match any metadata, so its `iss` promise is dropped.
 */
async function oauthPatch(deps: AppDeps, oauth: OAuthClientInput | undefined): Promise<ConnectionPatch> {
  if (!oauth) return {};
  const patch: ConnectionPatch = {};
  const byHand = oauth.authorizationUrl !== undefined || oauth.tokenUrl !== undefined;
  if (oauth.issuer !== undefined && !byHand) {
    const server = await discover(deps, oauth.issuer);
    Object.assign(patch, { oauth_authorization_url: server.authorizationUrl, oauth_token_url: server.tokenUrl, oauth_iss_parameter_supported: server.issParameterSupported });
  }
  if (oauth.issuer !== undefined) patch.oauth_issuer = oauth.issuer;
  if (byHand) patch.oauth_iss_parameter_supported = false;
  if (oauth.authorizationUrl !== undefined) patch.oauth_authorization_url = oauth.authorizationUrl;
  if (oauth.tokenUrl !== undefined) patch.oauth_token_url = oauth.tokenUrl;
  if (oauth.clientId !== undefined) patch.oauth_client_id = oauth.clientId;
  if (oauth.clientSecret !== undefined) patch.oauth_client_secret_sealed = accounts.seal(deps, oauth.clientSecret);
  if (oauth.scopes !== undefined) patch.oauth_scopes = oauth.scopes.join(' ');
  return patch;
}

export async function updateConnection(deps: AppDeps, membership: Membership, connectionId: string, input: UpdateInput): Promise<McpConnection> {
  checkUrls(deps, input);
  const current = await store.findConnection(deps.db, membership.organizationId, membership.memberId, connectionId);
  if (!current) throw notFound();
  if (input.apiKey !== undefined && !(current.credential_mode === 'shared' && current.auth_type === 'apikey')) {
    throw Invalid.at(['body', 'apiKey'], 'only a shared apikey connection stores an apiKey');
  }
  if (input.oauthClient && current.auth_type !== 'oauth') throw Invalid.at(['body', 'oauthClient'], 'only an oauth connection takes oauthClient');
  const access = input.access ? normalizeAccess(input.access) : null;
  if (access) await checkAccessTargets(deps, membership.organizationId, access);
  const patch: ConnectionPatch = { ...(await oauthPatch(deps, input.oauthClient)) };
  if (input.name !== undefined) patch.name = input.name;
  if (input.url !== undefined) patch.url = input.url;
  if (input.apiKey !== undefined) patch.api_key_sealed = accounts.seal(deps, input.apiKey);
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.updateConnection(trx, membership.organizationId, connectionId, patch, now))) throw notFound();
    if (access) await replaceGrants(trx, { organizationId: membership.organizationId, connectionId, access, byMemberId: membership.memberId, now });
    const before = { name: current.name, url: current.url };
    await recordChange(trx, deps.audit, {
      action: 'mcp_connection.updated',
      target: { type: 'mcp_connection', id: connectionId },
      changes: { ...changed(before, { name: input.name, url: input.url }), ...created({ apiKey: input.apiKey, oauthClient: input.oauthClient, access: access ?? undefined }) },
    });
  });
  return itemOf(deps, membership, connectionId);
}

export async function deleteConnection(deps: AppDeps, membership: Membership, connectionId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.deleteConnection(trx, membership.organizationId, connectionId))) throw notFound();
    await recordChange(trx, deps.audit, { action: 'mcp_connection.deleted', target: { type: 'mcp_connection', id: connectionId } });
  });
}
