import { sql } from 'kysely';
import type { Db } from '../db/schema';
import type { Role } from '../domain/principal';
import { before, type Position } from '../lib/pagination';

/** A service account with its member's role; listed only while its member is active. */
export interface ServiceAccountRow {
  id: string;
  member_id: string;
  name: string;
  description: string | null;
  role: Role;
  disabled_at: Date | null;
  created_by_member_id: string;
  created_at: Date;
  last_used_at: Date | null;
}

/** A service account whose member is active (a deleted one's member is removed). */
function accountQuery(db: Db, organizationId: string) {
  return db
    .selectFrom('service_accounts as s')
    .innerJoin('members as m', 'm.id', 's.member_id')
    .select([
      's.id',
      's.member_id',
      's.name',
      's.description',
      sql<Role>`m.role`.as('role'),
      's.disabled_at',
      's.created_by_member_id',
      's.created_at',
      's.last_used_at',
    ])
    .where('s.organization_id', '=', organizationId)
    .where('m.removed_at', 'is', null);
}

export async function insertServiceAccount(
  db: Db,
  row: { id: string; organizationId: string; memberId: string; name: string; description: string | null; createdByMemberId: string; now: Date },
): Promise<void> {
  await db
    .insertInto('service_accounts')
    .values({
      id: row.id,
      organization_id: row.organizationId,
      member_id: row.memberId,
      name: row.name,
      description: row.description,
      disabled_at: null,
      created_by_member_id: row.createdByMemberId,
      created_at: row.now,
      updated_at: row.now,
      last_used_at: null,
    })
    .execute();
}

export async function findServiceAccount(db: Db, organizationId: string, id: string): Promise<ServiceAccountRow | undefined> {
  return accountQuery(db, organizationId).where('s.id', '=', id).executeTakeFirst();
}

/** The account, its row locked until the transaction ends (a change, a secret counted against the limit). */
export async function lockServiceAccount(db: Db, organizationId: string, id: string): Promise<ServiceAccountRow | undefined> {
  return accountQuery(db, organizationId).where('s.id', '=', id).forUpdate('s').executeTakeFirst();
}

export async function listServiceAccounts(db: Db, organizationId: string, after: Position | null, take: number): Promise<ServiceAccountRow[]> {
  let query = accountQuery(db, organizationId);
  if (after) query = query.where(before('s.created_at', 's.id', after));
  return query.orderBy('s.created_at', 'desc').orderBy('s.id', 'desc').limit(take).execute();
}

export async function updateServiceAccount(
  db: Db,
  organizationId: string,
  id: string,
  fields: { name?: string; description?: string | null; disabledAt?: Date | null },
  now: Date,
): Promise<void> {
  await db
    .updateTable('service_accounts')
    .set({
      ...(fields.name !== undefined ? { name: fields.name } : {}),
      ...(fields.description !== undefined ? { description: fields.description } : {}),
      ...(fields.disabledAt !== undefined ? { disabled_at: fields.disabledAt } : {}),
      updated_at: now,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .execute();
}

/** Stamps the account's last use when it is older than `staleBefore` (at most one write a minute). */
export async function touchServiceAccount(db: Db, id: string, now: Date, staleBefore: Date): Promise<void> {
  await db
    .updateTable('service_accounts')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
    .execute();
}

export interface SecretRow {
  id: string;
  service_account_id: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
}

/** Never `secret_hash`: it only ever appears in the verification lookup. */
const SECRET_COLUMNS = ['id', 'service_account_id', 'created_at', 'expires_at', 'last_used_at'] as const;

export async function insertSecret(
  db: Db,
  row: { id: string; organizationId: string; serviceAccountId: string; secretHash: string; now: Date; expiresAt: Date | null },
): Promise<SecretRow> {
  return db
    .insertInto('service_account_secrets')
    .values({
      id: row.id,
      organization_id: row.organizationId,
      service_account_id: row.serviceAccountId,
      secret_hash: row.secretHash,
      created_at: row.now,
      expires_at: row.expiresAt,
      last_used_at: null,
    })
    .returning(SECRET_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** Secrets not expired at `now` (the ones a rotation limit counts). */
export async function countLiveSecrets(db: Db, serviceAccountId: string, now: Date): Promise<number> {
  const row = await db
    .selectFrom('service_account_secrets')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('service_account_id', '=', serviceAccountId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Every secret of the account, expired ones included (so an admin sees why one stopped working). */
export async function listSecrets(db: Db, organizationId: string, serviceAccountId: string, after: Position | null, take: number): Promise<SecretRow[]> {
  let query = db
    .selectFrom('service_account_secrets')
    .select(SECRET_COLUMNS)
    .where('organization_id', '=', organizationId)
    .where('service_account_id', '=', serviceAccountId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

export async function deleteSecret(db: Db, organizationId: string, serviceAccountId: string, secretId: string): Promise<boolean> {
  const row = await db
    .deleteFrom('service_account_secrets')
    .where('organization_id', '=', organizationId)
    .where('service_account_id', '=', serviceAccountId)
    .where('id', '=', secretId)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** A deleted account's secrets go with it. */
export async function deleteSecretsOf(db: Db, organizationId: string, serviceAccountId: string): Promise<number> {
  const rows = await db
    .deleteFrom('service_account_secrets')
    .where('organization_id', '=', organizationId)
    .where('service_account_id', '=', serviceAccountId)
    .returning('id')
    .execute();
  return rows.length;
}

/** What the authorization server needs of a live secret: its account, member and organization. */
export interface VerifiedSecretRow {
  secretId: string;
  secretLastUsedAt: Date | null;
  serviceAccountId: string;
  accountLastUsedAt: Date | null;
  memberId: string;
  organizationId: string;
}

/**
 * The secret with this hash, of this account, unexpired, whose account is enabled, whose member
 * is active and whose organization exists; undefined otherwise.
 */
export async function findLiveSecret(db: Db, serviceAccountId: string, secretHash: string, now: Date): Promise<VerifiedSecretRow | undefined> {
  return db
    .selectFrom('service_account_secrets as k')
    .innerJoin('service_accounts as s', 's.id', 'k.service_account_id')
    .innerJoin('members as m', 'm.id', 's.member_id')
    .innerJoin('organizations as o', 'o.id', 's.organization_id')
    .select([
      'k.id as secretId',
      'k.last_used_at as secretLastUsedAt',
      's.id as serviceAccountId',
      's.last_used_at as accountLastUsedAt',
      'm.id as memberId',
      'o.id as organizationId',
    ])
    .where('k.secret_hash', '=', secretHash)
    .where('k.service_account_id', '=', serviceAccountId)
    .where((eb) => eb.or([eb('k.expires_at', 'is', null), eb('k.expires_at', '>', now)]))
    .where('s.disabled_at', 'is', null)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    .where('o.deletion_scheduled_at', 'is', null)
    .executeTakeFirst();
}

export async function touchSecret(db: Db, secretId: string, now: Date, staleBefore: Date): Promise<void> {
  await db
    .updateTable('service_account_secrets')
    .set({ last_used_at: now })
    .where('id', '=', secretId)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
    .execute();
}

/** An account by id alone, deleted ones included (the authorization server's state check). */
export async function findAccountState(db: Db, id: string): Promise<{ organization_id: string; member_id: string; disabled_at: Date | null; removed_at: Date | null } | undefined> {
  return db
    .selectFrom('service_accounts as s')
    .innerJoin('members as m', 'm.id', 's.member_id')
    .select(['s.organization_id', 's.member_id', 's.disabled_at', 'm.removed_at'])
    .where('s.id', '=', id)
    .executeTakeFirst();
}

/**
 * Ends every credential of the service accounts a member of the user created, in any organization:
 * the accounts are disabled (their live access tokens fail on the next request), their secrets
 * deleted and their API keys revoked (so enabling one again revives nothing its creator knew).
 * Returns how many accounts.
 */
export async function endCredentialsOfAccountsCreatedByUser(db: Db, userId: string, now: Date): Promise<number> {
  const accounts = await db
    .updateTable('service_accounts')
    .set((eb) => ({ disabled_at: eb.fn.coalesce('disabled_at', eb.val(now)), updated_at: now }))
    .where('created_by_member_id', 'in', (eb) => eb.selectFrom('members').select('id').where('user_id', '=', userId))
    .returning(['id', 'member_id'])
    .execute();
  if (accounts.length === 0) return 0;
  await db.deleteFrom('service_account_secrets').where('service_account_id', 'in', accounts.map((a) => a.id)).execute();
  await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('member_id', 'in', accounts.map((a) => a.member_id))
    .where('revoked_at', 'is', null)
    .execute();
  return accounts.length;
}
