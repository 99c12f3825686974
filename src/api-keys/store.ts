import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  member_id: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  permissions: string[] | null;
  /** The service account whose member the key acts as; null for a person's key. */
  service_account_id: string | null;
}

/** Never `key_hash`: it only ever appears in the authentication lookup. */
const COLUMNS = ['id', 'name', 'prefix', 'member_id', 'created_at', 'expires_at', 'last_used_at', 'permissions'] as const;
const LISTED = ['k.id', 'k.name', 'k.prefix', 'k.member_id', 'k.created_at', 'k.expires_at', 'k.last_used_at', 'k.permissions', 's.id as service_account_id'] as const;

export async function insertApiKey(
  db: Db,
  key: { id: string; organizationId: string; memberId: string; name: string; prefix: string; keyHash: string; now: Date; expiresAt: Date | null; permissions: string[] | null },
): Promise<Omit<ApiKeyRow, 'service_account_id'>> {
  return db
    .insertInto('api_keys')
    .values({
      id: key.id,
      organization_id: key.organizationId,
      member_id: key.memberId,
      name: key.name,
      prefix: key.prefix,
      key_hash: key.keyHash,
      created_at: key.now,
      expires_at: key.expiresAt,
      last_used_at: null,
      revoked_at: null,
      permissions: key.permissions,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

/**
 * Keys not revoked (expired ones included, so an admin sees why a key stopped working), each with
 * the service account it belongs to, if any (one index hit per row: `service_accounts.member_id`
 * is unique).
 */
export async function listApiKeys(db: Db, organizationId: string, after: Position | null, take: number): Promise<ApiKeyRow[]> {
  let query = db
    .selectFrom('api_keys as k')
    .leftJoin('service_accounts as s', 's.member_id', 'k.member_id')
    .select(LISTED)
    .where('k.organization_id', '=', organizationId)
    .where('k.revoked_at', 'is', null);
  if (after) query = query.where(before('k.created_at', 'k.id', after));
  return query.orderBy('k.created_at', 'desc').orderBy('k.id', 'desc').limit(take).execute();
}

export async function revokeApiKey(db: Db, organizationId: string, apiKeyId: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', apiKeyId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Revokes every live key of a member (the member was removed or suspended). */
export async function revokeApiKeysOf(db: Db, organizationId: string, memberId: string, now: Date): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('organization_id', '=', organizationId)
    .where('member_id', '=', memberId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Revokes every live key the user made, in every organization (an account taken over, deleted); returns how many. */
export async function revokeApiKeysOfUser(db: Db, userId: string, now: Date): Promise<number> {
  const rows = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('member_id', 'in', (eb) => eb.selectFrom('members').select('id').where('user_id', '=', userId))
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return rows.length;
}
