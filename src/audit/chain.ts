import type { Db } from '../db/schema';
import { chainHash } from './canonical';
import { toEntry } from './entries';
import { entryCanonical } from './record';
import { chainBatch, type ChainRow } from './store';

/** Rows per round trip when exporting or verifying: memory is bounded by one batch. */
export const BATCH = 1000;

export interface Replay {
  checked: number;
  firstBrokenId: string | null;
  /** Position of the first broken entry (null when none). */
  firstBrokenSeq: bigint | null;
  /** Position of the oldest kept entry (null: none kept). */
  firstSeq: bigint | null;
  /** Position and stored hash of the newest kept entry. */
  lastSeq: bigint | null;
  lastHash: string | null;
}

/**
 * Recomputes an organization's chain from its oldest kept entry (whose stored previous hash is
 * the anchor after retention pruning): each entry must link to the one before it (previous hash,
 * next position) and its hash must be SHA-256(previous hash ‖ its canonical JSON). `visit` sees
 * every row with the hash recomputed for it, in chain order.
 */
export async function replayChain(db: Db, organizationId: string, visit?: (row: ChainRow, recomputed: string) => void): Promise<Replay> {
  let previous: string | null = null;
  let nextSeq: bigint | null = null;
  let afterSeq = '0';
  const out: Replay = { checked: 0, firstBrokenId: null, firstBrokenSeq: null, firstSeq: null, lastSeq: null, lastHash: null };
  for (;;) {
    const batch = await chainBatch(db, organizationId, afterSeq, BATCH);
    for (const row of batch) {
      const seq = BigInt(row.seq);
      const anchor = previous ?? row.prev_hash;
      const recomputed = chainHash(anchor, entryCanonical(toEntry(row)));
      const linked = row.prev_hash === anchor && (nextSeq === null || seq === nextSeq);
      if (out.firstBrokenId === null && (!linked || recomputed !== row.hash)) {
        out.firstBrokenId = row.id;
        out.firstBrokenSeq = seq;
      }
      visit?.(row, recomputed);
      out.firstSeq ??= seq;
      previous = row.hash;
      nextSeq = seq + 1n;
      out.checked++;
    }
    if (batch.length < BATCH) break;
    afterSeq = batch[batch.length - 1]!.seq;
  }
  out.lastSeq = nextSeq === null ? null : nextSeq - 1n;
  out.lastHash = previous;
  return out;
}
