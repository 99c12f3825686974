import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { ScrapeGauge } from './metrics';

/** What waits in one outbox: how many are pending, and how long the oldest has waited. */
export interface Backlog {
  pending: number;
  /** Seconds since the oldest pending row was queued; 0 when none is. */
  oldestAgeSeconds: number;
}

export interface Backlogs {
  webhooks: Backlog;
  mail: Backlog;
  /** The latest mail attempt (of the last ten minutes) failed: the transport is failing. */
  mailFailing: boolean;
}

const RECENT_MS = 10 * 60_000;

/**
 * The outboxes' backlogs, read from the database (so every process reports the same). Each count
 * and minimum reads a partial index of pending rows (`*_pending_created_idx`), never the table.
 */
export async function readBacklogs(db: Kysely<DB>, now: Date): Promise<Backlogs> {
  const since = new Date(now.getTime() - RECENT_MS);
  const { rows } = await sql<{ kind: string; pending: string; oldest: Date | string | null; failing: boolean | null }>`
    SELECT 'webhooks' AS kind, count(*) AS pending, min(created_at) AS oldest, NULL::boolean AS failing
      FROM webhook_deliveries WHERE status = 'pending'
    UNION ALL
    SELECT 'mail', count(*), min(created_at),
      (SELECT last_error IS NOT NULL FROM mail_messages WHERE last_attempt_at > ${since}::timestamptz ORDER BY last_attempt_at DESC LIMIT 1)
      FROM mail_messages WHERE status = 'pending'
  `.execute(db);
  const backlog = (kind: string): Backlog => {
    const row = rows.find((r) => r.kind === kind);
    const oldest = row?.oldest ? new Date(row.oldest).getTime() : null;
    return { pending: Number(row?.pending ?? 0), oldestAgeSeconds: oldest === null ? 0 : Math.max(0, (now.getTime() - oldest) / 1000) };
  };
  return { webhooks: backlog('webhooks'), mail: backlog('mail'), mailFailing: rows.find((r) => r.kind === 'mail')?.failing === true };
}

/**
 * The scrape-time gauges of a process (main.ts): its connection pool, and the outboxes' backlogs.
 * One read of the backlogs serves all four backlog gauges of a scrape.
 */
export function processGauges(db: Kysely<DB>, now: () => Date, poolStats?: () => { used: number; idle: number; waiting: number }): ScrapeGauge[] {
  let read: { at: number; value: Promise<Backlogs> } | null = null;
  const backlogs = () => {
    const t = Date.now();
    if (!read || t - read.at > 1000) read = { at: t, value: readBacklogs(db, now()) };
    return read.value;
  };
  const gauges: ScrapeGauge[] = [
    { name: 'webhook_deliveries_pending', help: 'Webhook deliveries waiting to be sent (every process reports the same value).', collect: async () => [{ value: (await backlogs()).webhooks.pending }] },
    { name: 'webhook_delivery_oldest_pending_age_seconds', help: 'Age of the oldest pending webhook delivery (0 when none).', collect: async () => [{ value: (await backlogs()).webhooks.oldestAgeSeconds }] },
    { name: 'mail_messages_pending', help: 'Mail messages waiting to be sent (every process reports the same value).', collect: async () => [{ value: (await backlogs()).mail.pending }] },
    { name: 'mail_message_oldest_pending_age_seconds', help: 'Age of the oldest pending mail message (0 when none).', collect: async () => [{ value: (await backlogs()).mail.oldestAgeSeconds }] },
  ];
  if (poolStats) {
    gauges.push(
      {
        name: 'db_client_connection_count',
        help: 'Connections of the request pool by state (OpenTelemetry db.client.connection.count).',
        labelNames: ['db_client_connection_state'],
        collect: () => {
          const s = poolStats();
          return [{ labels: { db_client_connection_state: 'used' }, value: s.used }, { labels: { db_client_connection_state: 'idle' }, value: s.idle }];
        },
      },
      { name: 'db_client_connection_pending_requests', help: 'Requests waiting for a connection of the pool (OpenTelemetry db.client.connection.pending_requests).', collect: () => [{ value: poolStats().waiting }] },
    );
  }
  return gauges;
}
