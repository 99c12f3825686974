import type { AdapterPayload } from 'oidc-provider';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

/**
 * Dynamically registered clients (RFC 7591, docs/oauth.md#dynamic-registration) in
 * `oauth_registered_clients`: the library validates a registration and hands it to the adapter's
 * `Client` upsert, which lands here; `findClient` (./clients.ts) reads it back on every request
 * that names the client. A client unused for `UNUSED_DAYS` is unknown (`invalid_client`) and
 * `pruneRegisteredClients` removes it.
 */
export const UNUSED_DAYS = 30;
const UNUSED_MS = UNUSED_DAYS * 86_400_000;

/** Fields of ours that a registration never keeps (the client's kind is decided by its id, ./outside-clients.ts). */
const OURS = ['client_kind', 'organization_id', 'member_id', 'client_secret', 'client_secret_expires_at'];

export async function saveRegisteredClient(db: Db, id: string, payload: AdapterPayload, now: Date): Promise<void> {
  const metadata = Object.fromEntries(Object.entries(payload).filter(([key]) => !OURS.includes(key)));
  const name = typeof metadata.client_name === 'string' ? metadata.client_name.slice(0, 255) : null;
  await db
    .insertInto('oauth_registered_clients')
    .values({ id, name, metadata: JSON.stringify(metadata), created_at: now, last_used_at: now })
    .onConflict((oc) => oc.column('id').doUpdateSet({ name, metadata: JSON.stringify(metadata) }))
    .execute();
}

export async function findRegisteredClient(db: Db, id: string, now: Date): Promise<Record<string, unknown> | undefined> {
  const row = await db.selectFrom('oauth_registered_clients').select('metadata').where('id', '=', id).where('last_used_at', '>', new Date(now.getTime() - UNUSED_MS)).executeTakeFirst();
  if (!row) return undefined;
  return typeof row.metadata === 'string' ? (JSON.parse(row.metadata) as Record<string, unknown>) : row.metadata;
}

/** A token was issued to the client: it stays known for another `UNUSED_DAYS`. */
export async function touchRegisteredClient(db: Db, id: string, now: Date): Promise<void> {
  await db.updateTable('oauth_registered_clients').set({ last_used_at: now }).where('id', '=', id).where('last_used_at', '<', new Date(now.getTime() - 60_000)).execute();
}

/** Removes clients unused for `UNUSED_DAYS` (the job runner's OAuth upkeep, ./upkeep.ts). */
export async function pruneRegisteredClients(db: Db, now: Date): Promise<number> {
  const result = await db.deleteFrom('oauth_registered_clients').where('last_used_at', '<=', new Date(now.getTime() - UNUSED_MS)).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export interface RegisteredClientRow {
  id: string;
  name: string | null;
  metadata: unknown;
  created_at: Date;
  last_used_at: Date;
}

/** A page of the clients still known (used within `UNUSED_DAYS`), newest first: the platform admins' list. */
export async function listRegisteredClients(db: Db, now: Date, after: Position | null, take: number): Promise<RegisteredClientRow[]> {
  let query = db
    .selectFrom('oauth_registered_clients')
    .select(['id', 'name', 'metadata', 'created_at', 'last_used_at'])
    .where('last_used_at', '>', new Date(now.getTime() - UNUSED_MS));
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

/** A registered client as the contract's `RegisteredOAuthClient`. */
export function toRegisteredClient(row: RegisteredClientRow) {
  const metadata = (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata) as { redirect_uris?: unknown };
  const redirectUris = Array.isArray(metadata.redirect_uris) ? metadata.redirect_uris.filter((uri): uri is string => typeof uri === 'string') : [];
  return {
    id: row.id,
    name: row.name,
    redirectUris,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at.toISOString(),
    expiresAt: new Date(row.last_used_at.getTime() + UNUSED_MS).toISOString(),
  };
}
