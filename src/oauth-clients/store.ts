import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

/** An organization's OAuth client as the routes show it: never `secret_hash`. */
export interface OAuthClientRow {
  id: string;
  name: string;
  type: 'public' | 'confidential';
  redirect_uris: string[];
  scopes: string[];
  logo_url: string | null;
  created_by_member_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = ['id', 'name', 'type', 'redirect_uris', 'scopes', 'logo_url', 'created_by_member_id', 'created_at', 'updated_at'] as const;

export async function insertClient(db: Db, organizationId: string, row: OAuthClientRow, secretHash: string | null): Promise<void> {
  await db
    .insertInto('oauth_clients')
    .values({ ...row, organization_id: organizationId, secret_hash: secretHash })
    .execute();
}

export async function findClient(db: Db, organizationId: string, id: string): Promise<OAuthClientRow | undefined> {
  return db.selectFrom('oauth_clients').select(COLUMNS).where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export async function lockClient(db: Db, organizationId: string, id: string): Promise<OAuthClientRow | undefined> {
  return db.selectFrom('oauth_clients').select(COLUMNS).where('organization_id', '=', organizationId).where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function listClients(db: Db, organizationId: string, after: Position | null, take: number): Promise<OAuthClientRow[]> {
  let query = db.selectFrom('oauth_clients').select(COLUMNS).where('organization_id', '=', organizationId);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

export async function updateClient(
  db: Db,
  organizationId: string,
  id: string,
  fields: { name?: string; redirectUris?: string[]; scopes?: string[]; logoUrl?: string | null },
  now: Date,
): Promise<void> {
  await db
    .updateTable('oauth_clients')
    .set({
      ...(fields.name !== undefined ? { name: fields.name } : {}),
      ...(fields.redirectUris !== undefined ? { redirect_uris: fields.redirectUris } : {}),
      ...(fields.scopes !== undefined ? { scopes: fields.scopes } : {}),
      ...(fields.logoUrl !== undefined ? { logo_url: fields.logoUrl } : {}),
      updated_at: now,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .execute();
}

export async function deleteClient(db: Db, organizationId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('oauth_clients').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
