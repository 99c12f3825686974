import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid } from '../lib/errors';
import * as accounts from '../connected-accounts/service';
import * as store from './store';
import { accountTarget, notFound, notThisKind, splitScopes, viewer } from './connection';
import { checkCallbackIssuer } from './authorization-server';
import { callTokenEndpoint } from './token-endpoint';

/** A member connects their account to a per-member OAuth connection: start, then the callback. */
export const MCP_CALLBACK_PATH = '/v1/mcp-connections/oauth/callback';

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
    target: accountTarget(membership, connectionId),
    endpoint: row.oauth_authorization_url,
    clientId: row.oauth_client_id,
    scopes: splitScopes(row.oauth_scopes),
    redirectUri: callbackUrl(deps),
  });
}

/** The callback: consume the state, check `iss`, exchange the code at the token URL, store. */
export async function completeOAuth(deps: AppDeps, query: accounts.CallbackQuery): Promise<void> {
  const pending = await accounts.takeAuthorization(deps, 'mcp', query);
  const { organizationId, connectionId } = pending.target;
  const client = connectionId ? await store.findOAuthClient(deps.db, organizationId, connectionId) : undefined;
  if (!client?.oauth_token_url || !client.oauth_client_id) throw Invalid.at(['query', 'state'], 'the connection of this sign-in no longer exists');
  checkCallbackIssuer(pending, client);
  const tokens = await callTokenEndpoint(
    deps,
    client,
    { grant_type: 'authorization_code', code: pending.code, redirect_uri: pending.redirectUri, code_verifier: pending.codeVerifier },
    'Connecting',
  );
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
