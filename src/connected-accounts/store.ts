import { sql, type RawBuilder, type SqlBool, type Transaction } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { Provider } from './tables';

/** Whose account: a member, for a provider, and for MCP the connection (null for the suite). */
export interface AccountTarget {
  organizationId: string;
  memberId: string;
  provider: Provider;
  connectionId: string | null;
}

export interface StateRow {
  state_hash: string;
  organization_id: string;
  member_id: string;
  provider: Provider;
  connection_id: string | null;
  code_verifier_sealed: string;
  redirect_uri: string;
}

export interface AccountRow {
  id: string;
  auth_kind: 'apikey' | 'oauth';
  secrets_sealed: string;
  access_expires_at: Date | null;
  scopes: string;
  external_user_id: string | null;
  external_display_name: string | null;
  created_at: Date;
  updated_at: Date;
}

const STATE_COLUMNS = ['state_hash', 'organization_id', 'member_id', 'provider', 'connection_id', 'code_verifier_sealed', 'redirect_uri'] as const;
const ACCOUNT_COLUMNS = [
  'id',
  'auth_kind',
  'secrets_sealed',
  'access_expires_at',
  'scopes',
  'external_user_id',
  'external_display_name',
  'created_at',
  'updated_at',
] as const;

/** The rows of one target (oauth_states and connected_accounts share these columns). */
function ofTarget(target: AccountTarget): RawBuilder<SqlBool> {
  const connection = target.connectionId === null ? sql`connection_id IS NULL` : sql`connection_id = ${target.connectionId}`;
  return sql<SqlBool>`(organization_id = ${target.organizationId} AND member_id = ${target.memberId}
    AND provider = ${target.provider} AND ${connection})`;
}

export async function insertState(
  db: Db,
  state: { hash: string; target: AccountTarget; codeVerifierSealed: string; redirectUri: string; now: Date; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('oauth_states')
    .values({
      state_hash: state.hash,
      organization_id: state.target.organizationId,
      member_id: state.target.memberId,
      provider: state.target.provider,
      connection_id: state.target.connectionId,
      code_verifier_sealed: state.codeVerifierSealed,
      redirect_uri: state.redirectUri,
      created_at: state.now,
      expires_at: state.expiresAt,
      used_at: null,
    })
    .execute();
}

/** Marks a state used, once: a second call (a replay) or an expired state finds nothing. */
export async function consumeState(db: Db, provider: Provider, hash: string, now: Date): Promise<StateRow | undefined> {
  return db
    .updateTable('oauth_states')
    .set({ used_at: now })
    .where('state_hash', '=', hash)
    .where('provider', '=', provider)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(STATE_COLUMNS)
    .executeTakeFirst();
}

/**
 * Locks a consumed state until the transaction ends. A disconnect deletes its member's states, so
 * a callback whose state was invalidated while it talked to the token endpoint finds nothing.
 */
export async function lockState(trx: Transaction<DB>, hash: string): Promise<boolean> {
  const row = await trx.selectFrom('oauth_states').select('state_hash').where('state_hash', '=', hash).forUpdate().executeTakeFirst();
  return row !== undefined;
}

export async function deleteState(db: Db, hash: string): Promise<void> {
  await db.deleteFrom('oauth_states').where('state_hash', '=', hash).execute();
}

export async function deleteStatesOf(db: Db, target: AccountTarget): Promise<void> {
  await db.deleteFrom('oauth_states').where(ofTarget(target)).execute();
}

/** Expired states of one member are useless; removing them on each start keeps the table small. */
export async function deleteExpiredStates(db: Db, memberId: string, now: Date): Promise<void> {
  await db.deleteFrom('oauth_states').where('member_id', '=', memberId).where('expires_at', '<=', now).execute();
}

export async function findAccount(db: Db, target: AccountTarget): Promise<AccountRow | undefined> {
  return db.selectFrom('connected_accounts').select(ACCOUNT_COLUMNS).where(ofTarget(target)).executeTakeFirst();
}

export interface AccountWrite {
  id: string;
  authKind: 'apikey' | 'oauth';
  secretsSealed: string;
  accessExpiresAt: Date | null;
  scopes: string;
  externalUserId: string | null;
  externalDisplayName: string | null;
  now: Date;
}

/** Inserts the member's account for the target, or replaces the one there (a reconnect). */
export async function upsertAccount(db: Db, target: AccountTarget, account: AccountWrite): Promise<AccountRow> {
  return db
    .insertInto('connected_accounts')
    .values({
      id: account.id,
      organization_id: target.organizationId,
      member_id: target.memberId,
      provider: target.provider,
      connection_id: target.connectionId,
      auth_kind: account.authKind,
      secrets_sealed: account.secretsSealed,
      access_expires_at: account.accessExpiresAt,
      scopes: account.scopes,
      external_user_id: account.externalUserId,
      external_display_name: account.externalDisplayName,
      created_at: account.now,
      updated_at: account.now,
    })
    .onConflict((oc) =>
      oc.expression(sql`member_id, provider, (coalesce(connection_id, ''))`).doUpdateSet({
        auth_kind: account.authKind,
        secrets_sealed: account.secretsSealed,
        access_expires_at: account.accessExpiresAt,
        scopes: account.scopes,
        external_user_id: account.externalUserId,
        external_display_name: account.externalDisplayName,
        created_at: account.now,
        updated_at: account.now,
      }),
    )
    .returning(ACCOUNT_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** Stores refreshed tokens of one account (it may have been deleted meanwhile: then nothing). */
/** The account row, locked until the transaction ends (one refresh per account at a time). */
export async function lockAccount(trx: Db, organizationId: string, accountId: string): Promise<AccountRow | undefined> {
  return trx.selectFrom('connected_accounts').select(ACCOUNT_COLUMNS).where('organization_id', '=', organizationId).where('id', '=', accountId).forUpdate().executeTakeFirst();
}

export async function updateAccountTokens(
  db: Db,
  organizationId: string,
  accountId: string,
  tokens: { secretsSealed: string; accessExpiresAt: Date | null; scopes: string; now: Date },
): Promise<void> {
  await db
    .updateTable('connected_accounts')
    .set({ secrets_sealed: tokens.secretsSealed, access_expires_at: tokens.accessExpiresAt, scopes: tokens.scopes, updated_at: tokens.now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', accountId)
    .execute();
}

/** Deletes the member's account for the target; true when there was one. */
export async function deleteAccount(db: Db, target: AccountTarget): Promise<boolean> {
  const deleted = await db.deleteFrom('connected_accounts').where(ofTarget(target)).returning('id').execute();
  return deleted.length > 0;
}

/** Every account and pending sign-in of a provider in an organization (its client changed). */
export async function deleteProviderAccounts(db: Db, organizationId: string, provider: Provider): Promise<void> {
  await db.deleteFrom('oauth_states').where('organization_id', '=', organizationId).where('provider', '=', provider).execute();
  await db.deleteFrom('connected_accounts').where('organization_id', '=', organizationId).where('provider', '=', provider).execute();
}

/** True while the member is active in the organization (a removed member cannot finish a sign-in). */
export async function memberIsActive(db: Db, organizationId: string, memberId: string): Promise<boolean> {
  const row = await db
    .selectFrom('members')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('id', '=', memberId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}
