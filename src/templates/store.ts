import { sql } from 'kysely';
import type { Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';

export interface TemplateSummaryRow {
  id: string;
  name: string;
  description: string;
  kind: string;
  version: number;
  created_by_member_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface TemplateRow extends TemplateSummaryRow {
  content: Record<string, unknown>;
}

const SUMMARY = ['id', 'name', 'description', 'kind', 'version', 'created_by_member_id', 'created_at', 'updated_at'] as const;
const RETURNING = sql`t.id, t.name, t.description, t.kind, t.version, t.created_by_member_id, t.created_at, t.updated_at, t.content`;

export async function insertTemplate(
  db: Db,
  t: { id: string; organizationId: string; name: string; description: string; kind: string; content: Record<string, unknown>; memberId: string; now: Date },
): Promise<TemplateRow> {
  return db
    .insertInto('templates')
    .values({
      id: t.id,
      organization_id: t.organizationId,
      name: t.name,
      description: t.description,
      kind: t.kind,
      content: JSON.stringify(t.content),
      version: 1,
      created_by_member_id: t.memberId,
      created_at: t.now,
      updated_at: t.now,
    })
    .returning([...SUMMARY, 'content'])
    .executeTakeFirstOrThrow();
}

export async function findTemplate(db: Db, organizationId: string, id: string): Promise<TemplateRow | undefined> {
  return db.selectFrom('templates').select([...SUMMARY, 'content']).where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export interface TemplateMeta {
  created_by_member_id: string | null;
  version: number;
  name: string;
  description: string;
  content_bytes: number;
  /** md5 of the content's canonical jsonb text: tells whether an update changed it. */
  content_md5: string;
}

/** What the permission, If-Match and audit need, without the content itself. */
export async function findTemplateMeta(db: Db, organizationId: string, id: string): Promise<TemplateMeta | undefined> {
  return db
    .selectFrom('templates')
    .select(['created_by_member_id', 'version', 'name', 'description', sql<number>`octet_length(content::text)`.as('content_bytes'), sql<string>`md5(content::text)`.as('content_md5')])
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export interface TemplateFilter {
  kind?: string;
  q?: string;
}

/** A newest-first page without `content` (lists never carry it). */
export async function listTemplates(db: Db, organizationId: string, filter: TemplateFilter, after: Position | null, take: number): Promise<(TemplateSummaryRow & Position)[]> {
  let query = db.selectFrom('templates').select([...SUMMARY, 'created_at as createdAt']).where('organization_id', '=', organizationId);
  if (filter.kind) query = query.where('kind', '=', filter.kind);
  if (filter.q) query = query.where(sql<boolean>`strpos(lower(name), lower(${filter.q})) > 0`);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}

export interface TemplatePatch {
  name?: string;
  description?: string;
  content?: Record<string, unknown>;
}

/**
 * One conditional UPDATE: the version grows by one only when a value really changes (jsonb
 * equality ignores key order), and with `versions` the row must still be at one of them. Two
 * concurrent PATCHes with the same If-Match: the second waits for the first's row lock, then
 * Postgres re-checks `version` on the new row and updates nothing. Undefined when no row matched.
 */
export async function updateTemplate(
  db: Db,
  organizationId: string,
  id: string,
  patch: TemplatePatch,
  versions: number[] | null,
  now: Date,
): Promise<(TemplateRow & { content_bytes: number; content_md5: string }) | undefined> {
  const name = patch.name ?? null;
  const description = patch.description ?? null;
  const content = patch.content === undefined ? null : JSON.stringify(patch.content);
  const changed = sql`((${name}::text IS NOT NULL AND ${name}::text IS DISTINCT FROM t.name)
    OR (${description}::text IS NOT NULL AND ${description}::text IS DISTINCT FROM t.description)
    OR (${content}::jsonb IS NOT NULL AND ${content}::jsonb IS DISTINCT FROM t.content))`;
  const result = await sql<TemplateRow & { content_bytes: number; content_md5: string }>`
    UPDATE templates AS t SET
      name = coalesce(${name}::text, t.name),
      description = coalesce(${description}::text, t.description),
      content = coalesce(${content}::jsonb, t.content),
      version = t.version + CASE WHEN ${changed} THEN 1 ELSE 0 END,
      updated_at = CASE WHEN ${changed} THEN ${now}::timestamptz ELSE t.updated_at END
    WHERE t.id = ${id} AND t.organization_id = ${organizationId}
      ${versions ? sql`AND t.version IN (${sql.join(versions)})` : sql``}
    RETURNING ${RETURNING}, octet_length(t.content::text) AS content_bytes, md5(t.content::text) AS content_md5`.execute(db);
  return result.rows[0];
}

/** Deletes the template (at one of `versions` when given); false when no row matched. */
export async function deleteTemplate(db: Db, organizationId: string, id: string, versions: number[] | null): Promise<boolean> {
  let query = db.deleteFrom('templates').where('organization_id', '=', organizationId).where('id', '=', id);
  if (versions) query = query.where('version', 'in', versions);
  const result = await query.executeTakeFirst();
  return result.numDeletedRows > 0n;
}
