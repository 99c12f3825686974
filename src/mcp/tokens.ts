import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { CodedError, Upstream } from '../lib/errors';
import { TokenEndpointError } from '../connected-accounts/oauth';
import * as accounts from '../connected-accounts/service';
import * as store from './store';
import { accountTarget, notFound, notThisKind, viewer } from './connection';
import { callTokenEndpoint } from './token-endpoint';

/** A member's current access token of a connection and when it expires (null: the server gave no lifetime). */
export interface CurrentToken {
  accessToken: string;
  expiresAt: Date | null;
}

/**
 * The bearer token a call to the MCP server on a member's behalf sends: the member's access token
 * on a per-member OAuth connection they may use, refreshed first when it has expired, with the
 * refresh serialized per account across processes (docs/egress.md#token-refresh-across-processes) and a rotated refresh
 * token kept. The credential broker (./broker.ts) lends it to a worker acting for the member.
 */
export async function memberAccessToken(deps: AppDeps, membership: Membership, connectionId: string): Promise<string> {
  const row = await store.findUsableConnection(deps.db, viewer(membership), connectionId);
  if (!row) throw notFound();
  if (row.credential_mode !== 'per_member' || row.auth_type !== 'oauth') throw notThisKind('oauth');
  return (await currentOAuthToken(deps, membership, connectionId)).accessToken;
}

/** The member's token on a per-member OAuth connection (checked by the caller), refreshed when expired. */
export async function currentOAuthToken(deps: AppDeps, membership: Membership, connectionId: string): Promise<CurrentToken> {
  const target = accountTarget(membership, connectionId);
  const account = await accounts.loadAccount(deps, target);
  if (!account?.secrets.accessToken) throw new CodedError(409, 'needs_connection', 'Connect your account to this MCP connection first.');
  if (!accounts.isExpired(deps, account)) return { accessToken: account.secrets.accessToken, expiresAt: account.row.access_expires_at };
  const client = await store.findOAuthClient(deps.db, membership.organizationId, connectionId);
  if (!client) throw notFound();
  try {
    const accessToken = await accounts.refreshAccount(deps, target, account, (refreshToken) =>
      callTokenEndpoint(deps, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, 'Refreshing the access token'),
    );
    return { accessToken, expiresAt: account.row.access_expires_at };
  } catch (err) {
    if (err instanceof TokenEndpointError) throw new Upstream('mcp_oauth_error', `Refreshing the access token failed: ${err.message}.`);
    throw err;
  }
}
