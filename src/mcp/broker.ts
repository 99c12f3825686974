import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { CodedError, Invalid } from '../lib/errors';
import { delegatedWorkerOf } from '../access/roles';
import { newId } from '../lib/ids';
import type { Page, PageRequest } from '../lib/pagination';
import * as accounts from '../connected-accounts/service';
import { recordChange } from '../audit';
import * as store from './store';
import * as uses from './uses-store';
import { accountTarget, notFound, viewer } from './connection';
import { currentOAuthToken, type CurrentToken } from './tokens';

/**
 * The credential broker (docs/workers-and-usage.md#the-credential-broker): a worker acting for a
 * member (an access token it exchanged for them, with `act`) borrows, for a moment, the current
 * credential of an MCP connection the member may use: their own account's access token on a
 * per-member connection (refreshed here when it has expired), their own API key, or the shared
 * API key. Never a refresh token or a client secret. Each loan is audited as `credential.issued`
 * and recorded for the member's list of uses, in one transaction.
 */
export type LentCredential = components['schemas']['McpAccessToken'];
export type ConnectionUse = components['schemas']['McpConnectionUse'];

async function credentialOf(deps: AppDeps, membership: Membership, row: store.ConnectionRow): Promise<CurrentToken & { tokenType: LentCredential['tokenType'] }> {
  if (row.auth_type === 'none') throw Invalid.at(['path', 'connectionId'], 'the connection takes no credential (authType none): there is nothing to lend');
  if (row.credential_mode === 'shared') {
    const sealed = await store.findSharedApiKey(deps.db, membership.organizationId, row.id);
    if (!sealed) throw notFound();
    return { accessToken: accounts.unseal(deps, sealed), expiresAt: null, tokenType: 'api_key' };
  }
  if (row.auth_type === 'oauth') return { ...(await currentOAuthToken(deps, membership, row.id)), tokenType: 'Bearer' };
  const account = await accounts.loadAccount(deps, accountTarget(membership, row.id));
  if (!account?.secrets.apiKey) throw new CodedError(409, 'needs_connection', 'The member has not set their API key on this MCP connection.');
  return { accessToken: account.secrets.apiKey, expiresAt: null, tokenType: 'api_key' };
}

/** POST /v1/mcp-connections/{id}/access-token. */
export async function lendCredential(deps: AppDeps, principal: Principal, membership: Membership, connectionId: string): Promise<LentCredential> {
  // A connection the member may not use is not found, whoever asks (another organization's included).
  const row = await store.findUsableConnection(deps.db, viewer(membership), connectionId);
  if (!row) throw notFound();
  const workerId = delegatedWorkerOf(principal);
  const credential = await credentialOf(deps, membership, row);
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await uses.insertUse(trx, { id: newId('mcpConnectionUse'), organizationId: membership.organizationId, connectionId, memberId: membership.memberId, workerId, clientId: principal.clientId ?? workerId, at: now });
    // The actor (member, client, act) comes from the request's context; nothing secret is recorded.
    await recordChange(trx, deps.audit, {
      action: 'credential.issued',
      target: { type: 'mcp_connection', id: connectionId },
      changes: { lent: { from: null, to: credential.tokenType === 'Bearer' ? 'oauth_access_token' : 'api_key' }, worker: { from: null, to: workerId } },
    });
  });
  return { accessToken: credential.accessToken, expiresAt: credential.expiresAt?.toISOString() ?? null, tokenType: credential.tokenType };
}

/** GET /v1/me/mcp-connections/{id}/uses: which agents borrowed the caller's credential of a connection, newest first. */
export async function listUses(deps: AppDeps, membership: Membership, connectionId: string, page: PageRequest): Promise<Page<ConnectionUse>> {
  const row = await store.findConnection(deps.db, membership.organizationId, membership.memberId, connectionId);
  if (!row) throw notFound();
  const scope = { organizationId: membership.organizationId, memberId: membership.memberId, connectionId };
  return deps.cursors.page(
    'mcp-connection-uses',
    page,
    (after, take) => uses.listUses(deps.db, scope, after, take),
    (use) => ({ workerId: use.worker_id, workerName: use.worker_name, clientId: use.client_id, at: use.used_at.toISOString() }),
  );
}
