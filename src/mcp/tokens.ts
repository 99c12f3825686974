import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { CodedError, Upstream } from '../lib/errors';
import { TokenEndpointError } from '../connected-accounts/oauth';
import * as accounts from '../connected-accounts/service';
import * as store from './store';
import { accountTarget, notFound, notThisKind, viewer } from './connection';
import { callTokenEndpoint } from './token-endpoint';

/**
 * The bearer token a call to the MCP server on a member's behalf sends: the member's access token
 * on a per-member OAuth connection they may use, refreshed first when it has expired, with the
 * refresh serialized per account across processes (docs/egress.md#token-refresh-across-processes) and a rotated refresh
 * token kept. No operation calls MCP servers yet; this is the one way such a call gets its token.
 */
export async function memberAccessToken(deps: AppDeps, membership: Membership, connectionId: string): Promise<string> {
  const row = await store.findUsableConnection(deps.db, viewer(membership), connectionId);
  if (!row) throw notFound();
  if (row.credential_mode !== 'per_member' || row.auth_type !== 'oauth') throw notThisKind('oauth');
  const target = accountTarget(membership, connectionId);
  const account = await accounts.loadAccount(deps, target);
  if (!account?.secrets.accessToken) throw new CodedError(409, 'needs_connection', 'Connect your account to this MCP connection first.');
  if (!accounts.isExpired(deps, account)) return account.secrets.accessToken;
  const client = await store.findOAuthClient(deps.db, membership.organizationId, connectionId);
  if (!client) throw notFound();
  try {
    return await accounts.refreshAccount(deps, target, account, (refreshToken) =>
      callTokenEndpoint(deps, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, 'Refreshing the access token'),
    );
  } catch (err) {
    if (err instanceof TokenEndpointError) throw new Upstream('mcp_oauth_error', `Refreshing the access token failed: ${err.message}.`);
    throw err;
  }
}
