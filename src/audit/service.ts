import { positioned } from '../lib/pagination';
import type { StreamBody } from '../contract';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import type { PageRequest } from '../lib/pagination';
import { Invalid } from '../lib/errors';
import { requireFeature } from '../plans';
import { toEntry } from './entries';
import { csvHeader, csvLine, ndjsonLine } from './export';
import { recordChange } from './record';
import { BATCH, replayChain, type Replay } from './chain';
import * as store from './store';

export { BATCH } from './chain';

function range(from: string | undefined, to: string | undefined) {
  const r = { from: from ? new Date(from) : undefined, to: to ? new Date(to) : undefined };
  if (r.from && r.to && r.from.getTime() > r.to.getTime()) throw Invalid.at(['query', 'to'], 'must not be before from');
  return r;
}

export async function listAuditLogs(
  deps: AppDeps,
  membership: Membership,
  query: PageRequest & { action?: string; actorMemberId?: string; targetId?: string; from?: string; to?: string },
) {
  const filter: store.AuditFilter = { action: query.action, actorMemberId: query.actorMemberId, targetId: query.targetId, ...range(query.from, query.to) };
  return deps.cursors.page(
    'audit-logs',
    query,
    async (after, take) => positioned(await store.listEntries(deps.db, membership.organizationId, filter, after, take)),
    (row) => toEntry(row),
  );
}

/**
 * The entries of the range in chain order, as NDJSON or CSV. Reading the log this way is audited:
 * the `audit_log.exported` entry (who, the range, the format) is committed before the first batch
 * is read, so an export without an end includes its own entry. The first batch is read before the
 * answer starts (so a failure there is an ordinary error response); the rest is read batch by
 * batch as the client takes it.
 */
export async function exportAuditLogs(deps: AppDeps, membership: Membership, query: { from?: string; to?: string; format?: 'ndjson' | 'csv' }) {
  await requireFeature(deps.db, deps.settings, membership.organizationId, 'auditLog');
  const r = range(query.from, query.to);
  const format = query.format ?? 'ndjson';
  const { organizationId } = membership;
  await deps.db.transaction().execute((trx) =>
    recordChange(trx, deps.audit, {
      action: 'audit_log.exported',
      target: { type: 'audit_log', id: organizationId },
      changes: { format: { from: null, to: format }, rangeFrom: { from: null, to: query.from ?? null }, rangeTo: { from: null, to: query.to ?? null } },
    }),
  );
  const first = await store.chainBatch(deps.db, organizationId, '0', BATCH, r);
  async function* stream(): StreamBody {
    if (format === 'csv') yield csvHeader();
    const line = format === 'csv' ? csvLine : ndjsonLine;
    let batch = first;
    while (batch.length > 0) {
      let chunk = '';
      for (const row of batch) chunk += line(toEntry(row));
      yield chunk;
      if (batch.length < BATCH) return;
      batch = await store.chainBatch(deps.db, organizationId, batch[batch.length - 1]!.seq, BATCH, r);
    }
  }
  const stamp = deps.clock.now().toISOString().replace(/[:.]/g, '-');
  return {
    contentType: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    fileName: `audit-log-${stamp}.${format === 'csv' ? 'csv' : 'ndjson'}`,
    stream: stream(),
  };
}

/**
 * Recomputes the organization's chain (./chain.ts) and compares its end with the chain head, so
 * an edited, inserted or deleted entry is found.
 */
export async function verifyAuditLog(deps: AppDeps, membership: Membership) {
  const replay = await replayChain(deps.db, membership.organizationId);
  return { ok: replay.firstBrokenId === null && !(await tailMissing(deps, membership.organizationId, replay)), checked: replay.checked, firstBrokenId: replay.firstBrokenId };
}

/**
 * Whether entries were deleted from the end: the head names the newest entry ever written, so
 * a replay ending before it (or on another hash) lost its tail. An organization whose entries
 * were all pruned by retention has none to compare.
 */
export async function tailMissing(deps: AppDeps, organizationId: string, replay: Replay): Promise<boolean> {
  const head = await store.chainHead(deps.db, organizationId);
  if (head === undefined) return false;
  const cutoff = deps.clock.now().getTime() - deps.settings.auditRetentionDays * 86_400_000;
  const allPruned = replay.checked === 0 && head.last_at != null && new Date(head.last_at).getTime() < cutoff;
  return !allPruned && (replay.lastSeq === null || BigInt(head.seq) !== replay.lastSeq || head.hash !== replay.lastHash);
}
