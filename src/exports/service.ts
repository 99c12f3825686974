import { sql } from 'kysely';
import type { StreamBody } from '../contract';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { created, recordChange } from '../audit';
import { isUniqueViolation } from '../db/errors';
import { Conflict, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { positioned, type PageRequest } from '../lib/pagination';
import * as store from './store';

const notFound = () => new NotFound('export_not_found', 'No export with this id in the organization.');

/** The API shape (docs/organization-exports.md#requesting-an-export). */
export function toExport(row: store.ExportRow) {
  return {
    id: row.id,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    requestedByMemberId: row.requested_by_member_id,
    startedAt: row.started_at?.toISOString() ?? null,
    finishedAt: row.finished_at?.toISOString() ?? null,
    size: row.size === null ? null : Number(row.size),
    sha256: row.sha256,
    expiresAt: row.expires_at?.toISOString() ?? null,
    error: row.error,
  };
}

/**
 * POST /v1/org/exports: a fresh session of a member holding `org.export` (the owner by default)
 * asks for an export; it is queued as pending, audited, and announced to the job runners
 * (src/exports/job.ts builds it). One at a time per organization: the partial unique index
 * refuses a second pending or running one (409 `export_in_progress`).
 */
export async function requestExport(deps: AppDeps, principal: Principal, membership: Membership) {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const row = await store.insertExport(trx, { id: newId('organizationExport'), organizationId: membership.organizationId, memberId: membership.memberId, userId: principal.userId!, now: deps.clock.now() });
      await recordChange(trx, deps.audit, { action: 'organization.export_requested', target: { type: 'organization_export', id: row.id }, changes: created({ status: 'pending' }) });
      await sql`SELECT pg_notify('org_exports', '')`.execute(trx);
      return toExport(row);
    });
  } catch (err) {
    if (isUniqueViolation(err, 'organization_exports_one_active')) throw new Conflict('export_in_progress', 'An export of this organization is pending or running already: wait for it to finish.');
    throw err;
  }
}

export async function listExports(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page('org-exports', page, async (after, take) => positioned(await store.listExports(deps.db, membership.organizationId, after, take)), (row) => toExport(row));
}

export async function getExport(deps: AppDeps, membership: Membership, id: string) {
  const row = await store.findExport(deps.db, membership.organizationId, id);
  if (!row) throw notFound();
  return toExport(row);
}

/**
 * GET /v1/org/exports/{id}/download: the zip as stored, chunk by chunk (one chunk in memory at a
 * time). Only a ready export within its expiry; each download is audited
 * (`organization.export_downloaded`) before the first byte, and the first chunk is read before
 * the answer starts, so a failure there is an ordinary error answer.
 */
export async function downloadExport(deps: AppDeps, membership: Membership, id: string) {
  const { organizationId } = membership;
  const row = await store.findExport(deps.db, organizationId, id);
  if (!row) throw notFound();
  if (row.status !== 'ready') throw new Conflict('export_not_ready', `The export is ${row.status}: there is nothing to download yet.`);
  if (row.files_erased_at || (row.expires_at && row.expires_at.getTime() <= deps.clock.now().getTime())) throw new Conflict('export_expired', 'The export expired and its file was removed: request a new one.');
  await deps.db.transaction().execute((trx) =>
    recordChange(trx, deps.audit, { action: 'organization.export_downloaded', target: { type: 'organization_export', id }, changes: { size: { from: null, to: Number(row.size) }, sha256: { from: null, to: row.sha256 } } }),
  );
  const first = await store.chunkAt(deps.db, id, 0);
  async function* stream(): StreamBody {
    let chunk = first;
    for (let seq = 1; chunk !== null; seq++) {
      yield Buffer.from(chunk);
      chunk = await store.chunkAt(deps.db, id, seq);
    }
  }
  return {
    size: Number(row.size),
    sha256: row.sha256!,
    fileName: `export-${organizationId}-${id}.zip`,
    stream: stream(),
  };
}
