import type { Db } from '../db/schema';
import { before, type Position, positioned } from '../lib/pagination';
import { sql, type Selectable } from 'kysely';
import type { SsoConnectionsTable } from './tables';

/** A connection row without its sealed client secret (read only where the secret is used). */
export type ConnectionRow = Omit<Selectable<SsoConnectionsTable>, 'oidc_client_secret_sealed'>;

const COLUMNS = [
  'c.id',
  'c.organization_id',
  'c.type',
  'c.name',
  'c.oidc_issuer',
  'c.oidc_client_id',
  'c.oidc_scopes',
  'c.saml_idp_entity_id',
  'c.saml_idp_sso_url',
  'c.saml_idp_certificate',
  'c.default_role',
  'c.role_mappings',
  'c.enabled',
  'c.created_by_member_id',
  'c.created_at',
  'c.updated_at',
] as const;

function connections(db: Db, organizationId: string) {
  return db.selectFrom('sso_connections as c').select(COLUMNS).where('c.organization_id', '=', organizationId);
}

/** What a create or update writes (the secret already sealed). */
export type ConnectionValues = Pick<
  Selectable<SsoConnectionsTable>,
  | 'name'
  | 'oidc_issuer'
  | 'oidc_client_id'
  | 'oidc_client_secret_sealed'
  | 'oidc_scopes'
  | 'saml_idp_entity_id'
  | 'saml_idp_sso_url'
  | 'saml_idp_certificate'
  | 'default_role'
  | 'role_mappings'
  | 'enabled'
>;

export async function insertConnection(
  db: Db,
  row: ConnectionValues & { id: string; organizationId: string; type: 'oidc' | 'saml'; memberId: string; now: Date },
): Promise<void> {
  const { id, organizationId, type, memberId, now, role_mappings, ...values } = row;
  await db
    .insertInto('sso_connections')
    .values({
      ...values,
      id,
      organization_id: organizationId,
      type,
      role_mappings: JSON.stringify(role_mappings),
      created_by_member_id: memberId,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export async function findConnection(db: Db, organizationId: string, id: string): Promise<ConnectionRow | undefined> {
  return (await connections(db, organizationId).where('c.id', '=', id).executeTakeFirst()) as ConnectionRow | undefined;
}

/** The row locked for a change (FOR UPDATE), so concurrent edits apply one after the other. */
export async function lockConnection(db: Db, organizationId: string, id: string): Promise<ConnectionRow | undefined> {
  return (await connections(db, organizationId).where('c.id', '=', id).forUpdate().executeTakeFirst()) as ConnectionRow | undefined;
}

export async function listConnections(db: Db, organizationId: string, after: Position | null, take: number): Promise<(ConnectionRow & Position)[]> {
  let q = connections(db, organizationId);
  if (after) q = q.where(before('c.created_at', 'c.id', after));
  const rows = (await q.orderBy('c.created_at', 'desc').orderBy('c.id', 'desc').limit(take).execute()) as ConnectionRow[];
  return positioned(rows);
}

export async function updateConnection(db: Db, organizationId: string, id: string, patch: Partial<ConnectionValues>, now: Date): Promise<void> {
  const { role_mappings, ...rest } = patch;
  await db
    .updateTable('sso_connections')
    .set({ ...rest, ...(role_mappings !== undefined ? { role_mappings: JSON.stringify(role_mappings) } : {}), updated_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .execute();
}

export async function deleteConnection(db: Db, organizationId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('sso_connections').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The role keys of the organization among `keys` (to refuse a defaultRole or mapping naming none). */
export async function existingRoleKeys(db: Db, organizationId: string, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await db.selectFrom('organization_roles').select('key').where('organization_id', '=', organizationId).where('key', 'in', keys).execute();
  return new Set(rows.map((r) => r.key));
}

/**
 * Moves a role being deleted out of the organization's connections: their default role and group
 * mappings (in their order) name `toKey` instead of `fromKey`.
 */
export async function reassignRole(db: Db, organizationId: string, fromKey: string, toKey: string, now: Date): Promise<void> {
  await sql`UPDATE sso_connections SET
      default_role = CASE WHEN default_role = ${fromKey} THEN ${toKey} ELSE default_role END,
      role_mappings = (
        SELECT coalesce(jsonb_agg(CASE WHEN m.value->>'role' = ${fromKey} THEN jsonb_set(m.value, '{role}', to_jsonb(${toKey}::text)) ELSE m.value END ORDER BY m.ordinality), '[]'::jsonb)
        FROM jsonb_array_elements(role_mappings) WITH ORDINALITY AS m),
      updated_at = ${now}
    WHERE organization_id = ${organizationId} AND (default_role = ${fromKey} OR role_mappings @> jsonb_build_array(jsonb_build_object('role', ${fromKey}::text)))`.execute(db);
}
