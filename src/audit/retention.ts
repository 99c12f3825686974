import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import { pruneBatch } from './store';

const DAY_MS = 86_400_000;
const BATCH = 5000;

/**
 * Deletes audit entries older than `retentionDays` (by the injected clock), in batches so no
 * statement holds many rows locked. Each organization's chain then starts at its oldest kept
 * entry, whose stored previous hash anchors verification. Returns how many entries went.
 */
export async function pruneAuditLog(db: Kysely<DB>, clock: Clock, retentionDays: number): Promise<number> {
  const cutoff = new Date(clock.now().getTime() - retentionDays * DAY_MS);
  let total = 0;
  for (;;) {
    const n = await pruneBatch(db, cutoff, BATCH);
    total += n;
    if (n < BATCH) return total;
  }
}

/**
 * The periodic job each service process runs (started by main.ts): once at start, then every
 * `intervalMs`. Several processes pruning at once is harmless (a row is deleted once). The timer
 * does not keep the process alive; `stop()` ends it.
 */
export function startAuditRetention(deps: { db: Kysely<DB>; clock: Clock; logger: Logger; retentionDays: number; intervalMs?: number }): () => void {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      const pruned = await pruneAuditLog(deps.db, deps.clock, deps.retentionDays);
      if (pruned > 0) deps.logger.info({ pruned, retentionDays: deps.retentionDays }, 'audit entries pruned');
    } catch (err) {
      deps.logger.error({ err }, 'audit retention failed; retrying at the next interval');
    } finally {
      running = false;
    }
  };
  void run();
  const timer = setInterval(() => void run(), deps.intervalMs ?? 60 * 60_000);
  timer.unref();
  return () => clearInterval(timer);
}
