import { sql } from 'kysely';
import type { HandlerMap } from '../contract';
import { Unavailable } from '../lib/errors';
import { readBacklogs } from '../observability/outbox';
import { isShuttingDown } from './lifecycle';

/** An outbox whose oldest pending row is older than this is worth a warning on /ready. */
const BACKLOG_WARNING_SECONDS = 10 * 60;

export const systemHandlers: HandlerMap<'getHealth' | 'getReady'> = {
  getHealth: async () => ({ status: 200, body: { status: 'ok' } }),
  getReady: async ({ deps }) => {
    if (isShuttingDown()) throw new Unavailable('The process is shutting down.');
    try {
      await sql`SELECT 1`.execute(deps.db);
    } catch {
      throw new Unavailable('The database does not answer.');
    }
    // Warnings say what an operator should look at; they never make the process unready (another
    // process would see the same database and the same backlog).
    const warnings: { code: 'mail_failing' | 'webhook_backlog' | 'mail_backlog'; message: string }[] = [];
    try {
      const b = await readBacklogs(deps.db, deps.clock.now());
      if (b.mailFailing) warnings.push({ code: 'mail_failing', message: 'The latest mail send failed; check SMTP_URL and the relay (GET /v1/admin/mail lists the errors).' });
      if (b.webhooks.oldestAgeSeconds > BACKLOG_WARNING_SECONDS) {
        warnings.push({ code: 'webhook_backlog', message: `${b.webhooks.pending} webhook deliveries pending; the oldest was queued ${Math.round(b.webhooks.oldestAgeSeconds / 60)} minutes ago.` });
      }
      if (b.mail.oldestAgeSeconds > BACKLOG_WARNING_SECONDS) {
        warnings.push({ code: 'mail_backlog', message: `${b.mail.pending} mail messages pending; the oldest was queued ${Math.round(b.mail.oldestAgeSeconds / 60)} minutes ago.` });
      }
    } catch {
      // The backlog query failing right after SELECT 1 succeeded is not a readiness question.
    }
    return { status: 200, body: warnings.length > 0 ? { status: 'ok', warnings } : { status: 'ok' } };
  },
};
