import type { Generated } from 'kysely';
import type { Timestamp } from '../db/columns';

export type MailStatus = 'pending' | 'sent' | 'failed';

/** Outgoing messages (src/db/migrations/20261127_0655_mail.ts). */
export interface MailMessagesTable {
  id: string;
  kind: string;
  recipient: string;
  subject: string;
  /** `{text, html}` sealed with SecretBox; null once sent or given up. Never selected outside sending. */
  body_sealed: string | null;
  status: MailStatus;
  attempts: Generated<number>;
  last_error: string | null;
  last_attempt_at: Timestamp | null;
  next_attempt_at: Timestamp | null;
  /** Set while a runner holds the message; an expired lease means the holder died. */
  lease_until: Timestamp | null;
  lease_token: string | null;
  /** W3C trace context (`traceparent`) of the request that queued it, when there was one. */
  trace_context: string | null;
  created_at: Timestamp;
  sent_at: Timestamp | null;
  updated_at: Timestamp;
}

export interface MailTables {
  mail_messages: MailMessagesTable;
}
