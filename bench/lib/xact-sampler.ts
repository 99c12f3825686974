import pg from 'pg';

/** One transaction of another connection, as seen by the sampler: its longest age observed and what it ran then. */
export interface SeenTransaction {
  pid: number;
  ageMs: number;
  query: string;
  state: string;
}

export interface TransactionSample {
  /** Polls made, and the mean gap between them (the resolution of `longest`). */
  polls: number;
  meanGapMs: number;
  /** Distinct transactions seen open (a statement in autocommit is one). */
  seen: number;
  /** The longest-open transactions seen, longest first (a lower bound of each: seen at the last poll it was open). */
  longest: SeenTransaction[];
  /** The longest wait for a lock seen (a statement waiting on another's lock), ms. */
  longestLockWaitMs: number;
}

/**
 * Polls pg_stat_activity of one database every `everyMs` on its own connection and keeps, for
 * every transaction of the other connections (pid and xact_start), the longest age it was seen
 * open: the longest transaction, so the longest any lock was held, to within one poll. Its own
 * connection is left out, and idle ones (a full run once showed a LISTEN connection, idle, with
 * a 26-s xact_start); the bench runs nothing else on the database while it samples.
 */
export async function startTransactionSampler(url: string, everyMs = 20): Promise<{ stop(): Promise<TransactionSample>; client: pg.Client }> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  const byKey = new Map<string, SeenTransaction>();
  let polls = 0;
  let longestLockWaitMs = 0;
  let running = true;
  const started = Date.now();
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<{ pid: number; xact: string; age_ms: number; state: string; query: string; lock_wait_ms: number | null }>(
        `SELECT pid, xact_start::text AS xact, extract(epoch FROM clock_timestamp() - xact_start) * 1000 AS age_ms, state, left(query, 160) AS query,
           CASE WHEN wait_event_type = 'Lock' THEN extract(epoch FROM clock_timestamp() - query_start) * 1000 END AS lock_wait_ms
         FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND xact_start IS NOT NULL AND state <> 'idle'`,
      );
      polls++;
      for (const r of rows) {
        const key = `${r.pid} ${r.xact}`;
        const age = Number(r.age_ms);
        const seen = byKey.get(key);
        if (!seen || age > seen.ageMs) byKey.set(key, { pid: r.pid, ageMs: age, query: r.query.replace(/\s+/g, ' '), state: r.state });
        if (r.lock_wait_ms !== null) longestLockWaitMs = Math.max(longestLockWaitMs, Number(r.lock_wait_ms));
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })().catch(() => {
    running = false;
  });
  return {
    client,
    async stop() {
      running = false;
      await loop;
      await client.end().catch(() => undefined);
      const all = [...byKey.values()].sort((a, b) => b.ageMs - a.ageMs);
      return { polls, meanGapMs: (Date.now() - started) / Math.max(polls, 1), seen: all.length, longest: all.slice(0, 5), longestLockWaitMs };
    },
  };
}

/**
 * Paced reads: `workers` loops each sending `request` every `everyMs` (or as soon as the previous
 * answer came, when slower) until stopped; every answer's latency in ms, and the failures.
 */
export function pacedReads(request: () => Promise<Response>, workers: number, everyMs: number): { stop(): Promise<{ latencies: number[]; failures: number }> } {
  const latencies: number[] = [];
  let failures = 0;
  let running = true;
  const loops = Array.from({ length: workers }, async (_, w) => {
    await new Promise((resolve) => setTimeout(resolve, (everyMs / workers) * w));
    while (running) {
      const t0 = performance.now();
      try {
        const res = await request();
        await res.arrayBuffer();
        if (res.status === 200) latencies.push(performance.now() - t0);
        else failures++;
      } catch {
        failures++;
      }
      const wait = everyMs - (performance.now() - t0);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { latencies, failures };
    },
  };
}
