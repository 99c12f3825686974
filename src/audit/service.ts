import { positioned } from '../lib/pagination';
import type { StreamBody } from '../contract';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import type { PageRequest } from '../lib/pagination';
import { Invalid } from '../lib/errors';
import { requireFeature } from '../plans';
import { chainHash } from './canonical';
import { toEntry } from './entries';
import { csvHeader, csvLine, ndjsonLine } from './export';
import { entryCanonical } from './record';
import * as store from './store';

/** Rows per round trip when exporting or verifying: memory is bounded by one batch. */
export const BATCH = 1000;

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
 * The entries of the range in chain order, as NDJSON or CSV. The first batch is read before the
 * answer starts (so a failure there is an ordinary error response); the rest is read batch by
 * batch as the client takes it.
 */
export async function exportAuditLogs(deps: AppDeps, membership: Membership, query: { from?: string; to?: string; format?: 'ndjson' | 'csv' }) {
  await requireFeature(deps.db, deps.settings, membership.organizationId, 'auditLog');
  const r = range(query.from, query.to);
  const format = query.format ?? 'ndjson';
  const { organizationId } = membership;
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
 * Recomputes the organization's chain from its oldest kept entry (whose stored previous hash is
 * the anchor after retention pruning) and compares the end with the chain head, so an edited,
 * inserted or deleted entry is found.
 */
export async function verifyAuditLog(deps: AppDeps, membership: Membership) {
  const { organizationId } = membership;
  let previous: string | null = null;
  let nextSeq: bigint | null = null;
  let lastSeq = '0';
  let checked = 0;
  let firstBrokenId: string | null = null;
  for (;;) {
    const batch = await store.chainBatch(deps.db, organizationId, lastSeq, BATCH);
    for (const row of batch) {
      const anchor = previous ?? row.prev_hash;
      const linked = row.prev_hash === anchor && (nextSeq === null || BigInt(row.seq) === nextSeq);
      if (!firstBrokenId && (!linked || chainHash(anchor, entryCanonical(toEntry(row))) !== row.hash)) firstBrokenId = row.id;
      previous = row.hash;
      nextSeq = BigInt(row.seq) + 1n;
      checked++;
    }
    if (batch.length < BATCH) break;
    lastSeq = batch[batch.length - 1]!.seq;
  }
  const head = await store.chainHead(deps.db, organizationId);
  // The head names the newest entry ever written: later entries deleted by hand show here.
  const cutoff = deps.clock.now().getTime() - deps.settings.auditRetentionDays * 86_400_000;
  const allPruned = checked === 0 && head?.last_at != null && new Date(head.last_at).getTime() < cutoff;
  const tailMissing = head !== undefined && !allPruned && (nextSeq === null || BigInt(head.seq) !== nextSeq - 1n || head.hash !== previous);
  return { ok: firstBrokenId === null && !tailMissing, checked, firstBrokenId };
}
