import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Conflict, Upstream } from '../lib/errors';
import * as accounts from '../connected-accounts/service';
import { requestToken, trustedTransport, TokenEndpointError, type TokenSet } from '../connected-accounts/oauth';
import { deleteProviderAccounts } from '../connected-accounts/service';
import * as store from './store';
import { describeFailure, graphCall, SuiteCallError, toChatMessage, type ChatMessage } from './graph';
import { changed, recordChange } from '../audit';

/**
 * The office-suite capability (`suite-365`): the organization's OAuth client, members' sign-in
 * through the identity platform v2 (authorization code + PKCE), and sending into existing chats.
 */
export const SUITE_CALLBACK_PATH = '/v1/capabilities/suite-365/oauth/callback';
/** Delegated scopes: a refresh token, the member's profile (name and id) and sending chat messages. */
export const SUITE_SCOPES = ['offline_access', 'User.Read', 'ChatMessage.Send'];
type Feature = 'chatSend';

const needsConnection = (message: string) => new Conflict('needs_connection', message);
const suiteError = (message: string) => new Upstream('suite_api_error', message);

function features(value: string): Feature[] {
  return value.split(' ').filter((f): f is Feature => f === 'chatSend');
}

function identityUrl(deps: AppDeps, tenantId: string, endpoint: 'authorize' | 'token'): string {
  return `${deps.settings.suiteLoginBaseUrl}/${encodeURIComponent(tenantId)}/oauth2/v2.0/${endpoint}`;
}

function target(organizationId: string, memberId: string): accounts.AccountTarget {
  return { organizationId, memberId, provider: 'suite-365', connectionId: null };
}

function toClient(row: store.SuiteClientRow | undefined) {
  return {
    configured: row !== undefined,
    tenantId: row?.tenant_id ?? null,
    clientId: row?.client_id ?? null,
    hasClientSecret: row !== undefined,
    features: row ? features(row.features) : [],
    updatedAt: row ? row.updated_at.toISOString() : null,
  };
}

export async function getClient(deps: AppDeps, membership: Membership) {
  return toClient(await store.findClient(deps.db, membership.organizationId));
}

export async function putClient(
  deps: AppDeps,
  membership: Membership,
  input: { tenantId: string; clientId: string; clientSecret: string; features: Feature[] },
) {
  const now = deps.clock.now();
  const row = await deps.db.transaction().execute(async (trx) => {
    const before = await store.findClient(trx, membership.organizationId);
    // Members' tokens were issued to the previous app registration: they cannot be used or refreshed.
    if (before && (before.tenant_id !== input.tenantId || before.client_id !== input.clientId)) {
      await deleteProviderAccounts(trx, membership.organizationId, 'suite-365');
    }
    const row = await store.upsertClient(trx, {
      organizationId: membership.organizationId,
      tenantId: input.tenantId,
      clientId: input.clientId,
      clientSecretSealed: accounts.seal(deps, input.clientSecret),
      features: [...new Set(input.features)].join(' '),
      memberId: membership.memberId,
      now,
    });
    await recordChange(trx, deps.audit, {
      action: 'suite.oauth_client_set',
      target: { type: 'organization', id: membership.organizationId },
      changes: {
        ...changed(before ? { tenantId: before.tenant_id, clientId: before.client_id } : {}, { tenantId: input.tenantId, clientId: input.clientId }),
        clientSecret: { from: before ? 'set' : null, to: input.clientSecret },
        features: { from: before?.features ?? null, to: row.features },
      },
    });
    return row;
  });
  return toClient(row);
}

export async function startConnect(deps: AppDeps, membership: Membership): Promise<string> {
  const client = await store.findClient(deps.db, membership.organizationId);
  if (!client) throw needsConnection('The organization has no suite OAuth client; an admin sets one first.');
  return accounts.startAuthorization(deps, {
    target: target(membership.organizationId, membership.memberId),
    endpoint: identityUrl(deps, client.tenant_id, 'authorize'),
    clientId: client.client_id,
    scopes: SUITE_SCOPES,
    redirectUri: `${deps.settings.publicBaseUrl}${SUITE_CALLBACK_PATH}`,
    extraParams: { response_mode: 'query' },
  });
}

function tokenCall(deps: AppDeps, client: store.SuiteClientRow, params: Record<string, string>): Promise<TokenSet> {
  return requestToken(trustedTransport(deps.fetch), {
    url: identityUrl(deps, client.tenant_id, 'token'),
    params: { client_id: client.client_id, client_secret: accounts.unseal(deps, client.client_secret_sealed), ...params },
    timeoutMs: deps.settings.suiteTimeoutMs,
    now: deps.clock.now(),
    requestedScopes: SUITE_SCOPES,
  });
}

/** The member's name and id from `/me`; best effort (the chat reply carries them too). */
async function whoAmI(deps: AppDeps, accessToken: string): Promise<{ id: string; displayName: string } | null> {
  try {
    const reply = await graphCall(deps, { method: 'GET', path: '/me', token: accessToken });
    const { id, displayName } = reply.body ?? {};
    return reply.status === 200 && typeof id === 'string' && typeof displayName === 'string' ? { id, displayName } : null;
  } catch {
    return null;
  }
}

export async function completeOAuth(deps: AppDeps, query: accounts.CallbackQuery): Promise<void> {
  const pending = await accounts.takeAuthorization(deps, 'suite-365', query);
  const client = await store.findClient(deps.db, pending.target.organizationId);
  if (!client) throw needsConnection('The organization no longer has a suite OAuth client.');
  // The identity platform's issuer for the tenant (its v2.0 endpoints, RFC 9207 `iss`).
  accounts.checkIssuer(pending, (iss) => iss.replace(/\/+$/, '') === `${deps.settings.suiteLoginBaseUrl}/${client.tenant_id}/v2.0`);
  let tokens: TokenSet;
  try {
    tokens = await tokenCall(deps, client, {
      grant_type: 'authorization_code',
      code: pending.code,
      redirect_uri: pending.redirectUri,
      code_verifier: pending.codeVerifier,
      scope: SUITE_SCOPES.join(' '),
    });
  } catch (err) {
    if (err instanceof TokenEndpointError) throw suiteError(`Signing in to the suite failed: ${err.message}.`);
    throw err;
  }
  const identity = await whoAmI(deps, tokens.accessToken);
  await accounts.storeAuthorizedAccount(deps, pending, { tokens, identity });
}

export async function getConnection(deps: AppDeps, membership: Membership) {
  const account = await accounts.loadAccount(deps, target(membership.organizationId, membership.memberId));
  return {
    connected: account !== null,
    connectedAt: account ? account.row.created_at.toISOString() : null,
    scopes: account ? account.row.scopes.split(' ').filter(Boolean) : [],
  };
}

export async function deleteConnection(deps: AppDeps, membership: Membership): Promise<void> {
  const who = target(membership.organizationId, membership.memberId);
  await deps.db.transaction().execute(async (trx) => {
    const removed = await accounts.disconnect(trx, who);
    await recordChange(trx, deps.audit, { ...accounts.accountChange(who, 'account_disconnected'), changes: { removed: { from: null, to: removed } } });
  });
}

/**
 * Sends one message into an existing chat as the member. Refreshes an expired access token first,
 * and once more when the suite refuses the token (401) — a token revoked before its expiry.
 */
export async function sendMessage(deps: AppDeps, membership: Membership, chatId: string, content: string): Promise<ChatMessage> {
  const client = await store.findClient(deps.db, membership.organizationId);
  if (!client) throw needsConnection('The organization has no suite OAuth client.');
  if (!features(client.features).includes('chatSend')) throw needsConnection('Sending chat messages (chatSend) is off for this organization.');
  const who = target(membership.organizationId, membership.memberId);
  const account = await accounts.loadAccount(deps, who);
  if (!account || !account.secrets.accessToken) throw needsConnection('Connect your suite account first.');

  const refresh = async (): Promise<string> => {
    try {
      return await accounts.refreshAccount(deps, who, account, (refreshToken) =>
        tokenCall(deps, client, { grant_type: 'refresh_token', refresh_token: refreshToken, scope: SUITE_SCOPES.join(' ') }),
      );
    } catch (err) {
      if (err instanceof TokenEndpointError) throw suiteError(`Refreshing the suite access token failed: ${err.message}.`);
      throw err;
    }
  };
  const post = async (token: string) => {
    try {
      return await graphCall(deps, {
        method: 'POST',
        path: `/chats/${encodeURIComponent(chatId)}/messages`,
        token,
        body: { body: { contentType: 'text', content } },
      });
    } catch (err) {
      if (err instanceof SuiteCallError) throw suiteError(`Sending the message failed: ${err.message}.`);
      throw err;
    }
  };

  let refreshed = false;
  let token = account.secrets.accessToken;
  if (accounts.isExpired(deps, account)) {
    token = await refresh();
    refreshed = true;
  }
  let reply = await post(token);
  if (reply.status === 401 && !refreshed && account.secrets.refreshToken) {
    reply = await post(await refresh());
  }
  if (reply.status < 200 || reply.status > 299) throw suiteError(`Sending the message failed: ${describeFailure(reply)}.`);
  const fallback = { name: account.row.external_display_name ?? '', address: account.row.external_user_id ?? '' };
  const message = toChatMessage(reply.body, fallback);
  if (!message) throw suiteError(`Sending the message failed: the suite answered ${reply.status} with an unreadable chatMessage.`);
  return message;
}
