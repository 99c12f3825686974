import pg from 'pg';
import type { Logger } from 'pino';

/** Something that tells the job runner new jobs were committed (polling stays the fallback). */
export interface WakeSource {
  close(): Promise<void>;
}

const RECONNECT_MS = 1000;

/**
 * LISTEN on the jobs' channels over one dedicated connection (a LISTEN needs its session to stay
 * open, so it cannot use a pooled one). Every committed event with deliveries (src/webhooks/queue.ts)
 * and every queued message (src/mail/store.ts) NOTIFYs one, so the runner starts on new work at
 * once instead of at its next poll. A lost connection is reopened after a second; meanwhile the
 * runner still polls, so a missed notification only delays work by one poll. Server database only:
 * the embedded database is one process, and its runner polls.
 */
export function listenForJobs(connectionString: string, channels: readonly string[], onWake: () => void, logger: Logger): WakeSource {
  let client: pg.Client | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;

  const reconnect = () => {
    client = null;
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      void open();
    }, RECONNECT_MS);
  };

  const open = async () => {
    const c = new pg.Client({ connectionString });
    c.on('error', (err) => {
      logger.warn({ err }, 'job wake-up connection failed; polling until it is back');
      void c.end().catch(() => undefined);
      if (client === c) reconnect();
    });
    c.on('notification', () => onWake());
    try {
      await c.connect();
      for (const channel of channels) await c.query(`LISTEN ${channel}`);
      if (closed) {
        await c.end();
        return;
      }
      client = c;
      // Work committed while no one listened is found by this wake-up's claim.
      onWake();
    } catch (err) {
      logger.warn({ err }, 'job wake-up connection could not be opened; polling until it is');
      await c.end().catch(() => undefined);
      reconnect();
    }
  };

  void open();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}
