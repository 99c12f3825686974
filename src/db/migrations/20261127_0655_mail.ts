import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Outgoing mail (docs/mail.md#queueing-and-sending): one row per message, written in the transaction of the
 * change that causes it (src/mail/queue.ts) and sent by the job runner (src/jobs/) with a lease,
 * like webhook deliveries. The body is sealed (SecretBox) and set to NULL once the message is sent
 * or given up; kind, recipient, subject and the delivery record stay.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE mail_messages (
      id text PRIMARY KEY,
      kind text NOT NULL,
      recipient text NOT NULL,
      subject text NOT NULL,
      -- {text, html} sealed with SecretBox; NULL once sent or failed.
      body_sealed text,
      status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      last_error text,
      last_attempt_at timestamptz(3),
      next_attempt_at timestamptz(3),
      lease_until timestamptz(3),
      lease_token text,
      -- W3C trace context of the request that queued the message (operations).
      trace_context text,
      created_at timestamptz(3) NOT NULL,
      sent_at timestamptz(3),
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX mail_messages_page_idx ON mail_messages (created_at DESC, id DESC);
    CREATE INDEX mail_messages_status_page_idx ON mail_messages (status, created_at DESC, id DESC);
    CREATE INDEX mail_messages_kind_page_idx ON mail_messages (kind, created_at DESC, id DESC);
    -- The runner's claim: due pending messages, oldest first.
    CREATE INDEX mail_messages_due_idx ON mail_messages (next_attempt_at, id) WHERE status = 'pending';
  `,
  );
}
