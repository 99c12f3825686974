import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { can, isCreator } from '../access/roles';
import { CodedError, Forbidden, Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { Page, PageRequest, Position } from '../lib/pagination';
import { changed, created, deleted, recordChange } from '../audit';
import * as store from './store';

type Schemas = components['schemas'];

/** docs/templates-and-llm-providers.md#templates: content is at most 256 KiB as (compact) JSON. */
export const MAX_CONTENT_BYTES = 256 * 1024;

const templateNotFound = () => new NotFound('template_not_found', 'The template could not be found.');

export class VersionMismatch extends CodedError<412> {
  constructor(current: number) {
    super(412, 'version_mismatch', `The template is at version ${current}; reload it and apply the change again.`, { version: current });
  }
}

/** The content's size as JSON; 413 past the limit. */
function checkContentSize(content: Record<string, unknown> | undefined): number | undefined {
  if (content === undefined) return undefined;
  const bytes = Buffer.byteLength(JSON.stringify(content), 'utf8');
  if (bytes > MAX_CONTENT_BYTES) {
    throw new CodedError(413, 'payload_too_large', `content is ${bytes} bytes as JSON; templates hold at most ${MAX_CONTENT_BYTES} bytes.`);
  }
  return bytes;
}

export function toSummary(row: store.TemplateSummaryRow): Schemas['TemplateSummary'] {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    kind: row.kind,
    version: row.version,
    createdByOrgMembershipId: row.created_by_member_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toTemplate(row: store.TemplateRow): Schemas['Template'] {
  return { ...toSummary(row), content: row.content };
}

export const etagOf = (item: { version: number }) => `"${item.version}"`;

/**
 * `If-Match` → the versions it allows, or null for "any" (absent or `*`). Accepts `"3"`, `W/"3"`
 * (weak tags compare by value here: the version is the whole state) and a bare `3`, and lists.
 */
export function parseIfMatch(header: string | undefined): number[] | null {
  if (header === undefined || header.trim() === '*') return null;
  const versions = header.split(',').map((part) => {
    const m = /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(part);
    if (!m) throw Invalid.at(['header', 'If-Match'], 'must be a template ETag such as "3" (or *)');
    return Number(m[1]);
  });
  return versions;
}

/** The creator, or a member with templates.manage (admins by default). */
function requireEditor(membership: Membership, meta: { created_by_member_id: string | null }): void {
  if (isCreator(membership, meta.created_by_member_id) || can(membership, 'templates.manage')) return;
  throw new Forbidden('permission_required', 'Only the template creator or a member with templates.manage may change it.');
}

export async function createTemplate(deps: AppDeps, membership: Membership, body: Schemas['CreateTemplateRequest']) {
  const contentBytes = checkContentSize(body.content);
  const row = await deps.db.transaction().execute(async (trx) => {
    const inserted = await store.insertTemplate(trx, {
      id: newId('template'),
      organizationId: membership.organizationId,
      name: body.name,
      description: body.description ?? '',
      kind: body.kind,
      content: body.content,
      memberId: membership.memberId,
      now: deps.clock.now(),
    });
    // The content itself (up to 256 KiB) stays out of the log; its size says that it was set.
    const fields = { name: inserted.name, description: inserted.description, kind: inserted.kind, version: 1, contentBytes };
    await recordChange(trx, deps.audit, { action: 'template.created', target: { type: 'template', id: inserted.id }, changes: created(fields) });
    return inserted;
  });
  return toTemplate(row);
}

export async function listTemplates(deps: AppDeps, membership: Membership, query: store.TemplateFilter & PageRequest): Promise<Page<Schemas['TemplateSummary']>> {
  return deps.cursors.page<store.TemplateSummaryRow & Position, Schemas['TemplateSummary']>(
    'templates',
    query,
    (after, take) => store.listTemplates(deps.db, membership.organizationId, { kind: query.kind, q: query.q }, after, take),
    toSummary,
  );
}

export async function getTemplate(deps: AppDeps, membership: Membership, id: string) {
  const row = await store.findTemplate(deps.db, membership.organizationId, id);
  if (!row) throw templateNotFound();
  return toTemplate(row);
}

export async function updateTemplate(deps: AppDeps, membership: Membership, id: string, patch: store.TemplatePatch, ifMatch: string | undefined) {
  const versions = parseIfMatch(ifMatch);
  checkContentSize(patch.content);
  return deps.db.transaction().execute(async (trx) => {
    const meta = await store.findTemplateMeta(trx, membership.organizationId, id);
    if (!meta) throw templateNotFound();
    requireEditor(membership, meta);
    const row = await store.updateTemplate(trx, membership.organizationId, id, patch, versions, deps.clock.now());
    if (row) {
      if (row.version !== meta.version) {
        const before = { name: meta.name, description: meta.description, version: meta.version };
        const after = { name: row.name, description: row.description, version: row.version };
        const content = row.content_md5 !== meta.content_md5 ? { contentBytes: { from: meta.content_bytes, to: row.content_bytes } } : {};
        const changes = { ...changed(before, after), ...content };
        await recordChange(trx, deps.audit, { action: 'template.updated', target: { type: 'template', id }, changes });
      }
      return toTemplate(row);
    }
    // No row: a concurrent change moved the version (or deleted the template) after the check.
    const now = await store.findTemplateMeta(trx, membership.organizationId, id);
    if (!now) throw templateNotFound();
    throw new VersionMismatch(now.version);
  });
}

export async function deleteTemplate(deps: AppDeps, membership: Membership, id: string, ifMatch: string | undefined): Promise<void> {
  const versions = parseIfMatch(ifMatch);
  await deps.db.transaction().execute(async (trx) => {
    const meta = await store.findTemplateMeta(trx, membership.organizationId, id);
    if (!meta) throw templateNotFound();
    requireEditor(membership, meta);
    if (await store.deleteTemplate(trx, membership.organizationId, id, versions)) {
      await recordChange(trx, deps.audit, { action: 'template.deleted', target: { type: 'template', id }, changes: deleted({ name: meta.name, version: meta.version }) });
      return;
    }
    const now = await store.findTemplateMeta(trx, membership.organizationId, id);
    if (!now) throw templateNotFound();
    throw new VersionMismatch(now.version);
  });
}
