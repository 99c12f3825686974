import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import type { AuthorizationClientType, OAuthAuthorizationsTable, ThirdPartyClients } from './tables';
import type { Selectable } from 'kysely';

export type AuthorizationRow = Selectable<OAuthAuthorizationsTable>;

const live = (db: Db, now: Date) => db.selectFrom('oauth_authorizations as a').selectAll('a').where('a.revoked_at', 'is', null).where('a.expires_at', '>', now);

/** A page of the live authorizations of the user's memberships (every organization of theirs). */
export async function listOfUser(db: Db, userId: string, now: Date, after: Position | null, take: number): Promise<AuthorizationRow[]> {
  let query = live(db, now).innerJoin('members as m', 'm.id', 'a.member_id').where('m.user_id', '=', userId);
  if (after) query = query.where(before('a.created_at', 'a.id', after));
  return query.orderBy('a.created_at', 'desc').orderBy('a.id', 'desc').limit(take).execute();
}

export async function listOfOrganization(db: Db, organizationId: string, now: Date, after: Position | null, take: number): Promise<AuthorizationRow[]> {
  let query = live(db, now).where('a.organization_id', '=', organizationId);
  if (after) query = query.where(before('a.created_at', 'a.id', after));
  return query.orderBy('a.created_at', 'desc').orderBy('a.id', 'desc').limit(take).execute();
}

/** Revokes a live authorization the filter admits; its row (for the audit entry and the grant), or undefined. */
export async function revoke(db: Db, id: string, scope: { userId: string } | { organizationId: string }, now: Date): Promise<AuthorizationRow | undefined> {
  let query = db.updateTable('oauth_authorizations as a').set({ revoked_at: now }).where('a.id', '=', id).where('a.revoked_at', 'is', null).where('a.expires_at', '>', now);
  if ('userId' in scope) {
    query = query.where(({ exists, selectFrom }) => exists(selectFrom('members as m').select('m.id').whereRef('m.id', '=', 'a.member_id').where('m.user_id', '=', scope.userId)));
  } else {
    query = query.where('a.organization_id', '=', scope.organizationId);
  }
  return query.returningAll().executeTakeFirst();
}

/** Revokes every live authorization of one client in the organization (the client is deleted); their rows. */
export async function revokeOfClient(db: Db, organizationId: string, clientId: string, now: Date): Promise<AuthorizationRow[]> {
  return db
    .updateTable('oauth_authorizations')
    .set({ revoked_at: now })
    .where('organization_id', '=', organizationId)
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .returningAll()
    .execute();
}

/** Revokes the live authorization of a grant (refresh-token reuse); its row, or undefined. */
export async function revokeByGrant(db: Db, grantKey: string, now: Date): Promise<AuthorizationRow | undefined> {
  return db.updateTable('oauth_authorizations').set({ revoked_at: now }).where('grant_key', '=', grantKey).where('revoked_at', 'is', null).returningAll().executeTakeFirst();
}

export async function findLive(db: Db, where: { memberId: string; clientId: string; resource: string }, now: Date): Promise<AuthorizationRow | undefined> {
  return live(db, now).where('a.member_id', '=', where.memberId).where('a.client_id', '=', where.clientId).where('a.resource', '=', where.resource).executeTakeFirst();
}

export async function findLiveByGrant(db: Db, grantKey: string, now: Date): Promise<AuthorizationRow | undefined> {
  return live(db, now).where('a.grant_key', '=', grantKey).executeTakeFirst();
}

export interface NewAuthorization {
  id: string;
  organizationId: string;
  memberId: string;
  clientId: string;
  clientType: AuthorizationClientType;
  clientName: string;
  scopes: string[];
  resource: string;
  grantKey: string | null;
  expiresAt: Date;
  /** A delegation's subject token, hashed. */
  subjectTokenHash?: string;
}

export async function insert(db: Db, row: NewAuthorization, now: Date): Promise<AuthorizationRow> {
  return db
    .insertInto('oauth_authorizations')
    .values({
      id: row.id,
      organization_id: row.organizationId,
      member_id: row.memberId,
      client_id: row.clientId,
      client_type: row.clientType,
      client_name: row.clientName,
      scopes: row.scopes,
      resource: row.resource,
      grant_key: row.grantKey,
      subject_token_hash: row.subjectTokenHash ?? null,
      created_at: now,
      last_used_at: now,
      expires_at: row.expiresAt,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function extend(db: Db, id: string, fields: { scopes: string[]; clientName: string; grantKey: string | null; expiresAt: Date }, now: Date): Promise<AuthorizationRow> {
  return db
    .updateTable('oauth_authorizations')
    .set({ scopes: fields.scopes, client_name: fields.clientName, grant_key: fields.grantKey, last_used_at: now, expires_at: fields.expiresAt })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A token was issued under it: last use now, and it lives another refresh lifetime. */
/**
 * The live authorization of a grant, stamped as used (`last_used_at`, its expiry moved to
 * `expiresAt`) in the statement that finds it: a token issued under it (code or refresh) reads and
 * stamps it in one round trip (test/api/token-round-trips.test.ts). The row as stamped, or undefined.
 */
export async function useLiveByGrant(db: Db, grantKey: string, now: Date, expiresAt: Date): Promise<AuthorizationRow | undefined> {
  return db
    .updateTable('oauth_authorizations')
    .set({ last_used_at: now, expires_at: expiresAt })
    .where('id', '=', (eb) => eb.selectFrom('oauth_authorizations as a').select('a.id').where('a.grant_key', '=', grantKey).where('a.revoked_at', 'is', null).where('a.expires_at', '>', now).limit(1))
    .returningAll()
    .executeTakeFirst();
}

export interface OAuthPolicy {
  thirdPartyClients: ThirdPartyClients;
  allowList: string[];
  maxScopes: string[] | null;
}

/** What an organization that never set its policy gets (docs/oauth.md#the-organizations-policy). */
export const DEFAULT_OAUTH_POLICY: OAuthPolicy = Object.freeze({ thirdPartyClients: 'allow' as const, allowList: [], maxScopes: null });

export async function findPolicy(db: Db, organizationId: string): Promise<OAuthPolicy> {
  const row = await db.selectFrom('organization_oauth_policies').select(['third_party_clients', 'allow_list', 'max_scopes']).where('organization_id', '=', organizationId).executeTakeFirst();
  return row ? { thirdPartyClients: row.third_party_clients, allowList: row.allow_list, maxScopes: row.max_scopes } : { ...DEFAULT_OAUTH_POLICY, allowList: [] };
}

export async function putPolicy(db: Db, organizationId: string, policy: OAuthPolicy, now: Date): Promise<void> {
  const values = { third_party_clients: policy.thirdPartyClients, allow_list: policy.allowList, max_scopes: policy.maxScopes, updated_at: now };
  await db
    .insertInto('organization_oauth_policies')
    .values({ organization_id: organizationId, ...values })
    .onConflict((oc) => oc.column('organization_id').doUpdateSet(values))
    .execute();
}

/** The user's live memberships with what each organization requires of a sign-in (consent's choice of organization). */
export async function organizationsOfUser(db: Db, userId: string) {
  return db
    .selectFrom('members as m')
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .leftJoin('organization_auth_policies as ap', 'ap.organization_id', 'm.organization_id')
    .select(['m.id as memberId', 'm.role as role', 'o.id as organizationId', 'o.name as name', 'o.sso_enforced as ssoEnforced', 'ap.require_mfa as requireMfa'])
    .where('m.user_id', '=', userId)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    .orderBy('o.name')
    .limit(100)
    .execute();
}

export async function memberState(db: Db, memberId: string) {
  return db
    .selectFrom('members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['m.user_id as userId', 'm.organization_id as organizationId', 'u.email_verified_at as emailVerifiedAt'])
    .where('m.id', '=', memberId)
    .where('m.removed_at', 'is', null)
    .executeTakeFirst();
}

export async function userState(db: Db, userId: string) {
  return db.selectFrom('users').select(['id', 'email', 'email_verified_at as emailVerifiedAt']).where('id', '=', userId).executeTakeFirst();
}

/**
 * Ends the member's unrevoked delegations to a worker (live or expired), so a new one takes their
 * place under the one-per-member-client-resource index; their rows.
 */
export async function revokeDelegationsTo(db: Db, memberId: string, workerId: string, now: Date): Promise<AuthorizationRow[]> {
  return db
    .updateTable('oauth_authorizations')
    .set({ revoked_at: now })
    .where('member_id', '=', memberId)
    .where('client_id', '=', workerId)
    .where('client_type', '=', 'worker')
    .where('revoked_at', 'is', null)
    .returningAll()
    .execute();
}

/**
 * The live delegation a subject token belongs to: found by id and the token's hash, its member still active and the organization not locked; with the member's role.
 */
export async function findDelegationForExchange(db: Db, where: { id: string; subjectTokenHash: string }, now: Date) {
  return db
    .selectFrom('oauth_authorizations as a')
    .innerJoin('members as m', 'm.id', 'a.member_id')
    .select(['a.id', 'a.organization_id', 'a.member_id', 'a.client_id', 'a.scopes', 'a.expires_at'])
    .where('a.id', '=', where.id)
    .where('a.subject_token_hash', '=', where.subjectTokenHash)
    .where('a.client_type', '=', 'worker')
    .where('a.revoked_at', 'is', null)
    .where('a.expires_at', '>', now)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('organizations as o').select('o.id').whereRef('o.id', '=', 'a.organization_id').where('o.deletion_scheduled_at', 'is not', null))))
    .executeTakeFirst();
}
