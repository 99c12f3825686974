import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid } from '../lib/errors';
import * as accounts from '../connected-accounts/service';
import { recordChange } from '../audit';
import * as store from './store';
import { accountTarget, notFound, notThisKind, viewer } from './connection';

/** A member's own account on a per-member connection: a pasted API key, or disconnecting. */

export async function setMyCredential(deps: AppDeps, membership: Membership, connectionId: string, apiKey: string): Promise<{ connectedAt: string }> {
  const row = await store.findUsableConnection(deps.db, viewer(membership), connectionId);
  if (!row) throw notFound();
  if (row.credential_mode !== 'per_member' || row.auth_type !== 'apikey') throw notThisKind('apikey');
  const account = await accounts.storeApiKeyAccount(deps, accountTarget(membership, connectionId), apiKey);
  return { connectedAt: account.created_at.toISOString() };
}

/**
 * Removes only the caller's account (and pending sign-ins) on a per-member connection, in one
 * transaction. The connection, its shared credential, grants, OAuth client and other members'
 * accounts are untouched.
 */
export async function disconnectMyAccount(deps: AppDeps, membership: Membership, connectionId: string): Promise<void> {
  const target = accountTarget(membership, connectionId);
  const removed = await deps.db.transaction().execute(async (trx) => {
    const row = await store.findConnection(trx, membership.organizationId, membership.memberId, connectionId);
    if (!row) return 'not_found' as const;
    if (row.credential_mode === 'shared') return 'shared' as const;
    if (!(await accounts.disconnect(trx, target))) return 'nothing' as const;
    await recordChange(trx, deps.audit, accounts.accountChange(target, 'account_disconnected'));
    return 'removed' as const;
  });
  if (removed === 'shared') throw Invalid.at(['path', 'connectionId'], 'a shared connection has no per-member account to disconnect');
  if (removed !== 'removed') throw notFound();
}
