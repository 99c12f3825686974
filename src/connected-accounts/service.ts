import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import { deriveKey } from '../lib/crypto';
import { CodedError, Invalid } from '../lib/errors';
import { newId } from '../lib/ids';
import { authorizeUrl, newPkce, newState, verifyState, TokenEndpointError, type TokenSet } from './oauth';
import * as store from './store';
import type { AccountRow, AccountTarget } from './store';
import type { Provider } from './tables';
import { recordChange } from '../audit';

/**
 * The connected-accounts core shared by MCP connections and the suite capability: start an
 * authorization-code + PKCE sign-in, complete it from the callback, store API keys and tokens
 * sealed with SECRET_KEY, refresh an expired access token, and disconnect. Pending sign-ins live
 * in Postgres (`oauth_states`), so any process can serve the callback.
 */
export type { AccountTarget } from './store';

/** How long a started sign-in may take before its state expires. */
export const STATE_TTL_MS = 10 * 60_000;
/** Refresh this long before the recorded expiry, so a token does not expire in flight. */
const EXPIRY_SKEW_MS = 60_000;

export interface AccountSecrets {
  apiKey?: string;
  accessToken?: string;
  refreshToken?: string | null;
}

export function seal(deps: AppDeps, value: string): string {
  return deps.secrets.encrypt(value);
}

/** Opens a sealed value; a value sealed with another SECRET_KEY fails loudly (500, logged). */
export function unseal(deps: AppDeps, sealed: string): string {
  try {
    return deps.secrets.decrypt(sealed);
  } catch (err) {
    throw new Error(`a stored secret could not be decrypted (was SECRET_KEY changed?): ${(err as Error).message}`);
  }
}

function stateKey(deps: AppDeps): Buffer {
  if (!deps.settings.secretKey) throw new Error('SECRET_KEY is not set');
  return deriveKey(deps.settings.secretKey, 'oauth-state');
}

export interface StartInput {
  target: AccountTarget;
  endpoint: string;
  clientId: string;
  scopes: string[];
  redirectUri: string;
  extraParams?: Record<string, string>;
}

/** Records a pending sign-in and returns the provider URL to send the member's browser to. */
export async function startAuthorization(deps: AppDeps, input: StartInput): Promise<string> {
  const now = deps.clock.now();
  const pkce = newPkce();
  const { state, hash } = newState(stateKey(deps), input.target.provider);
  await store.deleteExpiredStates(deps.db, input.target.memberId, now);
  await store.insertState(deps.db, {
    hash,
    target: input.target,
    codeVerifierSealed: seal(deps, pkce.verifier),
    redirectUri: input.redirectUri,
    now,
    expiresAt: new Date(now.getTime() + STATE_TTL_MS),
  });
  return authorizeUrl(input.endpoint, {
    response_type: 'code',
    client_id: input.clientId,
    redirect_uri: input.redirectUri,
    ...(input.scopes.length > 0 ? { scope: input.scopes.join(' ') } : {}),
    state,
    code_challenge: pkce.challenge,
    code_challenge_method: 'S256',
    ...input.extraParams,
  });
}

export interface CallbackQuery {
  state: string;
  code?: string;
  error?: string;
  error_description?: string;
  /** RFC 9207: the issuer of the authorization server that redirected here. */
  iss?: string;
}

export interface PendingAuthorization {
  target: AccountTarget;
  stateHash: string;
  code: string;
  codeVerifier: string;
  redirectUri: string;
  iss: string | undefined;
}

const badState = () => Invalid.at(['query', 'state'], 'state is not valid, has expired or was already used');

/** Checks and consumes the callback's state (single use), giving the code and PKCE verifier. */
export async function takeAuthorization(deps: AppDeps, provider: Provider, query: CallbackQuery): Promise<PendingAuthorization> {
  const hash = verifyState(stateKey(deps), provider, query.state);
  if (!hash) throw badState();
  const row = await store.consumeState(deps.db, provider, hash, deps.clock.now());
  if (!row) throw badState();
  if (query.error) {
    const description = query.error_description ? `: ${query.error_description.slice(0, 200)}` : '';
    throw new CodedError(400, 'oauth_error', `The authorization server ended the sign-in with ${query.error.slice(0, 64)}${description}`);
  }
  if (!query.code) throw Invalid.at(['query', 'code'], 'is required');
  return {
    target: { organizationId: row.organization_id, memberId: row.member_id, provider: row.provider, connectionId: row.connection_id },
    stateHash: row.state_hash,
    code: query.code,
    codeVerifier: unseal(deps, row.code_verifier_sealed),
    redirectUri: row.redirect_uri,
    iss: query.iss,
  };
}

/**
 * RFC 9207: an `iss` in the callback must be the issuer the flow was started with (a mix-up
 * attack sends another server's code here otherwise). Absent `iss` is accepted (most servers do
 * not send it). Checked before the code is exchanged, so nothing is stored.
 */
export function checkIssuer(pending: PendingAuthorization, expected: (iss: string) => boolean): void {
  if (pending.iss !== undefined && !expected(pending.iss)) {
    throw Invalid.at(['query', 'iss'], 'is not the issuer of the authorization server this sign-in was started with');
  }
}

export interface StoreInput {
  tokens: TokenSet;
  identity?: { id: string; displayName: string } | null;
  /** Checks inside the transaction that the target still accepts the account (throws if not). */
  guard?: (trx: Transaction<DB>) => Promise<void>;
}

/**
 * Stores the account of a completed sign-in, in one transaction that first locks the state: when
 * the member disconnected (or the connection went) while the code was being exchanged, the state
 * is gone and nothing is stored.
 */
export async function storeAuthorizedAccount(deps: AppDeps, pending: PendingAuthorization, input: StoreInput): Promise<AccountRow> {
  const secrets: AccountSecrets = { accessToken: input.tokens.accessToken, refreshToken: input.tokens.refreshToken };
  const sealed = seal(deps, JSON.stringify(secrets));
  return deps.db.transaction().execute(async (trx) => {
    if (!(await store.lockState(trx, pending.stateHash))) {
      throw Invalid.at(['query', 'state'], 'the sign-in was cancelled before it completed');
    }
    if (!(await store.memberIsActive(trx, pending.target.organizationId, pending.target.memberId))) {
      throw Invalid.at(['query', 'state'], 'the member of this sign-in is no longer in the organization');
    }
    await input.guard?.(trx);
    const row = await store.upsertAccount(trx, pending.target, {
      id: newId('connectedAccount'),
      authKind: 'oauth',
      secretsSealed: sealed,
      accessExpiresAt: input.tokens.expiresAt,
      scopes: input.tokens.scopes.join(' '),
      externalUserId: input.identity?.id ?? null,
      externalDisplayName: input.identity?.displayName ?? null,
      now: deps.clock.now(),
    });
    await store.deleteState(trx, pending.stateHash);
    // The callback has no principal: the member who started the sign-in is the actor.
    await recordChange(trx, deps.audit, {
      ...accountChange(pending.target, 'account_connected'),
      actor: { type: 'member', id: null, memberId: pending.target.memberId },
      changes: { scopes: { from: null, to: input.tokens.scopes.join(' ') }, accessToken: { from: null, to: input.tokens.accessToken } },
    });
    return row;
  });
}

/** The audit entry of a member's account on a connection (MCP) or on the suite. */
export function accountChange(target: AccountTarget, verb: 'account_connected' | 'account_disconnected') {
  return target.provider === 'mcp'
    ? { organizationId: target.organizationId, action: `mcp_connection.${verb}`, target: { type: 'mcp_connection', id: target.connectionId } }
    : { organizationId: target.organizationId, action: `suite.${verb}`, target: { type: 'member', id: target.memberId } };
}

/** Stores (or replaces) a member's pasted API key. */
export async function storeApiKeyAccount(deps: AppDeps, target: AccountTarget, apiKey: string): Promise<AccountRow> {
  return deps.db.transaction().execute(async (trx) => {
    const row = await store.upsertAccount(trx, target, {
      id: newId('connectedAccount'),
      authKind: 'apikey',
      secretsSealed: seal(deps, JSON.stringify({ apiKey } satisfies AccountSecrets)),
      accessExpiresAt: null,
      scopes: '',
      externalUserId: null,
      externalDisplayName: null,
      now: deps.clock.now(),
    });
    await recordChange(trx, deps.audit, { ...accountChange(target, 'account_connected'), changes: { apiKey: { from: null, to: apiKey } } });
    return row;
  });
}

/** Removes the member's account and pending sign-ins for the target; true when an account went. */
export async function disconnect(trx: Transaction<DB>, target: AccountTarget): Promise<boolean> {
  await store.deleteStatesOf(trx, target);
  return store.deleteAccount(trx, target);
}

export interface LoadedAccount {
  row: AccountRow;
  secrets: AccountSecrets;
}

export async function loadAccount(deps: AppDeps, target: AccountTarget): Promise<LoadedAccount | null> {
  const row = await store.findAccount(deps.db, target);
  if (!row) return null;
  return { row, secrets: JSON.parse(unseal(deps, row.secrets_sealed)) as AccountSecrets };
}

export function isExpired(deps: AppDeps, account: LoadedAccount): boolean {
  const expiresAt = account.row.access_expires_at;
  return expiresAt !== null && expiresAt.getTime() - EXPIRY_SKEW_MS <= deps.clock.now().getTime();
}

/**
 * Replaces the account's tokens with ones from its refresh token (`refresh` does the provider
 * call). A refresh token the provider rotated is kept; one it did not return stays the old one.
 *
 * Serialized per account across processes (docs/egress.md#token-refresh-across-processes): the account row is locked
 * (SELECT … FOR UPDATE) for the refresh, so a second caller waits, then finds an access token
 * other than the one it saw expire and uses it instead of spending the refresh token again
 * (providers that rotate refresh tokens revoke the whole family on reuse).
 */
export async function refreshAccount(
  deps: AppDeps,
  target: AccountTarget,
  account: LoadedAccount,
  refresh: (refreshToken: string) => Promise<TokenSet>,
): Promise<string> {
  const seen = account.secrets.accessToken;
  return deps.db.transaction().execute(async (trx) => {
    const row = await store.lockAccount(trx, target.organizationId, account.row.id);
    if (!row) throw new TokenEndpointError('unreadable', 'the account was disconnected meanwhile');
    const current = JSON.parse(unseal(deps, row.secrets_sealed)) as AccountSecrets;
    if (current.accessToken && current.accessToken !== seen) {
      account.row = row;
      account.secrets = current;
      return current.accessToken;
    }
    const refreshToken = current.refreshToken;
    if (!refreshToken) throw new TokenEndpointError('unreadable', 'the access token expired and no refresh token is stored');
    const tokens = await refresh(refreshToken);
    const secrets: AccountSecrets = { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken ?? refreshToken };
    await store.updateAccountTokens(trx, target.organizationId, account.row.id, {
      secretsSealed: seal(deps, JSON.stringify(secrets)),
      accessExpiresAt: tokens.expiresAt,
      scopes: tokens.scopes.join(' '),
      now: deps.clock.now(),
    });
    account.secrets = secrets;
    account.row = { ...account.row, access_expires_at: tokens.expiresAt };
    return tokens.accessToken;
  });
}

/** Drops every connected account of a provider (the suite's OAuth client was removed). */
export { deleteProviderAccounts } from './store';
