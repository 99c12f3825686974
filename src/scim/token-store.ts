import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

export interface ScimTokenRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
}

/** Never `token_hash`: it only appears in the authentication lookup. */
const COLUMNS = ['id', 'name', 'prefix', 'created_at', 'last_used_at'] as const;

export async function insertToken(
  db: Db,
  token: { id: string; organizationId: string; memberId: string; name: string; prefix: string; tokenHash: string; now: Date },
): Promise<ScimTokenRow> {
  return db
    .insertInto('scim_tokens')
    .values({
      id: token.id,
      organization_id: token.organizationId,
      name: token.name,
      prefix: token.prefix,
      token_hash: token.tokenHash,
      created_by_member_id: token.memberId,
      created_at: token.now,
      last_used_at: null,
      revoked_at: null,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function listTokens(db: Db, organizationId: string, after: Position | null, take: number): Promise<ScimTokenRow[]> {
  let query = db.selectFrom('scim_tokens').select(COLUMNS).where('organization_id', '=', organizationId).where('revoked_at', 'is', null);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

export async function revokeToken(db: Db, organizationId: string, tokenId: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('scim_tokens')
    .set({ revoked_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', tokenId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Revokes every live SCIM token a member of the user created, in any organization; returns how many. */
export async function revokeTokensCreatedByUser(db: Db, userId: string, now: Date): Promise<number> {
  const rows = await db
    .updateTable('scim_tokens')
    .set({ revoked_at: now })
    .where('created_by_member_id', 'in', (eb) => eb.selectFrom('members').select('id').where('user_id', '=', userId))
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return rows.length;
}
