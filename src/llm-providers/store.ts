import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import { visibleTo } from '../access/resource-roles';
import { LLM_PROVIDER } from '../grants/resources';
import type { ProviderKind } from './model-list';

/** A provider row without its sealed key (read only where the key is used). */
export interface ProviderRow {
  id: string;
  name: string;
  provider: ProviderKind;
  base_url: string | null;
  api_version: string | null;
  models: string[];
  default_model: string | null;
  enabled: boolean;
  key_hint: string;
  key_updated_at: Date;
  created_by_member_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = [
  'p.id',
  'p.name',
  sql<ProviderKind>`p.provider`.as('provider'),
  'p.base_url',
  'p.api_version',
  sql<string[]>`p.models`.as('models'),
  'p.default_model',
  'p.enabled',
  'p.key_hint',
  'p.key_updated_at',
  'p.created_by_member_id',
  'p.created_at',
  'p.updated_at',
] as const;

function providers(db: Db, organizationId: string) {
  return db.selectFrom('llm_providers as p').select(COLUMNS).where('p.organization_id', '=', organizationId);
}

export interface NewProvider {
  id: string;
  organizationId: string;
  name: string;
  provider: ProviderKind;
  baseUrl: string | null;
  apiVersion: string | null;
  models: string[];
  defaultModel: string | null;
  enabled: boolean;
  apiKeySealed: string;
  keyHint: string;
  memberId: string;
  now: Date;
}

export async function insertProvider(db: Db, p: NewProvider): Promise<void> {
  await db
    .insertInto('llm_providers')
    .values({
      id: p.id,
      organization_id: p.organizationId,
      name: p.name,
      provider: p.provider,
      base_url: p.baseUrl,
      api_version: p.apiVersion,
      models: JSON.stringify(p.models),
      default_model: p.defaultModel,
      enabled: p.enabled,
      api_key_sealed: p.apiKeySealed,
      key_hint: p.keyHint,
      key_updated_at: p.now,
      created_by_member_id: p.memberId,
      created_at: p.now,
      updated_at: p.now,
    })
    .execute();
}

export async function findProvider(db: Db, organizationId: string, id: string): Promise<ProviderRow | undefined> {
  return providers(db, organizationId).where('p.id', '=', id).executeTakeFirst();
}

/** The sealed key of one provider, for the test call. */
export async function findSealedKey(db: Db, organizationId: string, id: string): Promise<string | undefined> {
  const row = await db.selectFrom('llm_providers').select('api_key_sealed').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  return row?.api_key_sealed;
}

/** Newest first; `visibleToMemberId` null for admins (every provider). */
export async function listProviders(db: Db, organizationId: string, visibleToMemberId: string | null, after: Position | null, take: number): Promise<(ProviderRow & Position)[]> {
  let query = providers(db, organizationId);
  if (visibleToMemberId) query = query.where(visibleTo(LLM_PROVIDER.ref, 'p', visibleToMemberId));
  if (after) query = query.where(before('p.created_at', 'p.id', after));
  const rows = await query.orderBy('p.created_at', 'desc').orderBy('p.id', 'desc').limit(take).execute();
  return rows.map((row) => ({ ...row, createdAt: row.created_at }));
}

export interface ProviderPatch {
  name?: string;
  base_url?: string | null;
  api_version?: string | null;
  models?: string[];
  default_model?: string | null;
  enabled?: boolean;
  api_key_sealed?: string;
  key_hint?: string;
  key_updated_at?: Date;
}

export async function updateProvider(db: Db, organizationId: string, id: string, patch: ProviderPatch, now: Date): Promise<ProviderRow | undefined> {
  const { models, ...rest } = patch;
  return db
    .updateTable('llm_providers as p')
    .set({ ...rest, ...(models !== undefined ? { models: JSON.stringify(models) } : {}), updated_at: now })
    .where('p.organization_id', '=', organizationId)
    .where('p.id', '=', id)
    .returning(COLUMNS)
    .executeTakeFirst();
}

/** Deletes the provider; its grants go with it (ON DELETE CASCADE). */
export async function deleteProvider(db: Db, organizationId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('llm_providers').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export interface UsableProviderRow extends ProviderRow {
  api_key_sealed: string;
}

/**
 * The enabled providers a member may use right now, with sealed keys, in one query: every one for
 * an admin, else those an active grant reaches (direct, team, org-wide). Oldest first.
 */
export async function usableProviders(
  db: Db,
  member: { organizationId: string; memberId: string; admin: boolean },
  options: { withKeys: boolean },
): Promise<UsableProviderRow[]> {
  let query = db
    .selectFrom('llm_providers as p')
    .select([...COLUMNS, options.withKeys ? 'p.api_key_sealed' : sql<string>`''`.as('api_key_sealed')])
    .where('p.organization_id', '=', member.organizationId)
    .where('p.enabled', '=', true);
  if (!member.admin) query = query.where(visibleTo(LLM_PROVIDER.ref, 'p', member.memberId));
  return query.orderBy('p.created_at').orderBy('p.id').execute();
}

/** The worker's creator and the creator's current role (null when they left the organization). */
export async function workerCreator(
  db: Db,
  organizationId: string,
  workerId: string,
): Promise<{ member_id: string; role: string | null; stopped_at: Date | null } | undefined> {
  return db
    .selectFrom('workers as w')
    .leftJoin('members as m', (join) => join.onRef('m.id', '=', 'w.created_by_member_id').on('m.removed_at', 'is', null))
    .select(['w.created_by_member_id as member_id', 'm.role', 'w.stopped_at'])
    .where('w.organization_id', '=', organizationId)
    .where('w.id', '=', workerId)
    .executeTakeFirst();
}
