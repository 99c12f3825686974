import type { AppDeps } from '../domain/deps';
import { Upstream } from '../lib/errors';
import * as accounts from '../connected-accounts/service';
import { requestToken, TokenEndpointError, type TokenSet } from '../connected-accounts/oauth';
import { splitScopes } from './connection';
import type { OAuthClientSecrets } from './store';

/**
 * One call to a connection's token endpoint (code exchange or refresh) with its client
 * credentials (client_secret_post when a secret is stored; a public client sends only its id),
 * through the egress policy. A refusal or failure is a 502 `mcp_oauth_error`.
 */
export async function callTokenEndpoint(deps: AppDeps, client: OAuthClientSecrets, params: Record<string, string>, what: string): Promise<TokenSet> {
  if (!client.oauth_token_url || !client.oauth_client_id) throw new Upstream('mcp_oauth_error', `${what} failed: the connection has no OAuth client.`);
  const form: Record<string, string> = { ...params, client_id: client.oauth_client_id };
  if (client.oauth_client_secret_sealed) form.client_secret = accounts.unseal(deps, client.oauth_client_secret_sealed);
  try {
    return await requestToken(deps.outbound.request, {
      url: client.oauth_token_url,
      params: form,
      timeoutMs: deps.settings.mcpOAuthTimeoutMs,
      now: deps.clock.now(),
      requestedScopes: splitScopes(client.oauth_scopes),
    });
  } catch (err) {
    if (err instanceof TokenEndpointError) throw new Upstream('mcp_oauth_error', `${what} failed: ${err.message}.`);
    throw err;
  }
}
