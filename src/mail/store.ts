import { sql, type Kysely } from 'kysely';
import type { DB, Db } from '../db/schema';
import { before, type Position } from '../lib/pagination';
import type { MailStatus } from './tables';

/** The channel a queued message is announced on at commit; runners LISTEN (src/jobs/wakeup.ts). */
export const MAIL_CHANNEL = 'mail_messages';

export interface NewMessage {
  id: string;
  kind: string;
  recipient: string;
  subject: string;
  bodySealed: string;
  traceContext: string | null;
  now: Date;
}

/**
 * The message's CTEs for a statement that writes it with the change causing it: `mail_queued`
 * (the pending row, due now, RETURNING id) and `mail_announced` (its NOTIFY, which the statement
 * must read; Postgres sends it only when the transaction commits, so a change that rolls back
 * sends nothing).
 */
export function messageCtes(m: NewMessage) {
  return sql`mail_queued AS (
      INSERT INTO mail_messages (id, kind, recipient, subject, body_sealed, status, attempts, next_attempt_at, trace_context, created_at, updated_at)
      VALUES (${m.id}, ${m.kind}, ${m.recipient}, ${m.subject}, ${m.bodySealed}, 'pending', 0, ${m.now}::timestamptz, ${m.traceContext}, ${m.now}::timestamptz, ${m.now}::timestamptz)
      RETURNING id
    ), mail_announced AS (
      SELECT pg_notify(${MAIL_CHANNEL}, '') AS notified FROM mail_queued
    )`;
}

/**
 * Inserts many pending messages, due now, in one statement, with one announcement: for notices
 * prepared before their transaction (src/org/lifecycle-job.ts), so it holds one round trip.
 */
export async function insertMessages(db: Db, messages: NewMessage[]): Promise<void> {
  if (messages.length === 0) return;
  const rows = messages.map(
    (m) => sql`(${m.id}, ${m.kind}, ${m.recipient}, ${m.subject}, ${m.bodySealed}, 'pending', 0, ${m.now}::timestamptz, ${m.traceContext}, ${m.now}::timestamptz, ${m.now}::timestamptz)`,
  );
  await sql`WITH mail_queued AS (
      INSERT INTO mail_messages (id, kind, recipient, subject, body_sealed, status, attempts, next_attempt_at, trace_context, created_at, updated_at)
      VALUES ${sql.join(rows)}
      RETURNING id
    )
    SELECT pg_notify(${MAIL_CHANNEL}, '') FROM (SELECT 1 FROM mail_queued LIMIT 1) AS queued`.execute(db);
}

/** Inserts a pending message, due now, and announces it in the same statement (`messageCtes`). */
export async function insertMessage(db: Db, m: NewMessage): Promise<void> {
  await sql`WITH ${messageCtes(m)} SELECT count(*) FROM mail_announced`.execute(db);
}

export interface ClaimedMessage {
  id: string;
  kind: string;
  recipient: string;
  subject: string;
  body_sealed: string | null;
  /** Attempts including this one. */
  attempts: number;
  lease_token: string;
  /** The queuing request's `traceparent` (the send span's parent), when it was traced. */
  trace_context: string | null;
}

/**
 * Leases up to `batch` due messages, oldest first. FOR UPDATE SKIP LOCKED lets runners of other
 * processes pass over rows being claimed, and the lease is re-checked on the row's latest version,
 * so a message is never leased twice at once.
 */
export async function claimMessages(db: Kysely<DB>, options: { now: Date; leaseUntil: Date; token: string; batch: number }): Promise<ClaimedMessage[]> {
  const { now, leaseUntil, token, batch } = options;
  const { rows } = await sql<ClaimedMessage>`
    WITH picked AS (
      SELECT id FROM mail_messages
      WHERE status = 'pending' AND next_attempt_at <= ${now}::timestamptz
        AND (lease_until IS NULL OR lease_until <= ${now}::timestamptz)
      ORDER BY next_attempt_at, id
      LIMIT ${batch}::int
      FOR UPDATE SKIP LOCKED
    )
    UPDATE mail_messages m
    SET lease_until = ${leaseUntil}::timestamptz, lease_token = ${token}, attempts = m.attempts + 1, last_attempt_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
    FROM picked
    WHERE m.id = picked.id AND m.status = 'pending' AND (m.lease_until IS NULL OR m.lease_until <= ${now}::timestamptz)
    RETURNING m.id, m.kind, m.recipient, m.subject, m.body_sealed, m.attempts, m.lease_token, m.trace_context
  `.execute(db);
  return rows;
}

export interface MailOutcome {
  id: string;
  token: string;
  status: MailStatus;
  error: string | null;
  next: Date | null;
  finished: Date;
}

/**
 * Writes outcomes and releases leases in one statement. A sent or given-up message loses its body
 * (the link it carried is erased with it). A row whose lease was taken over is left alone.
 */
export async function recordMailOutcomes(db: Kysely<DB>, outcomes: MailOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  const payload = JSON.stringify(outcomes.map((o) => ({ id: o.id, token: o.token, status: o.status, error: o.error, next: o.next?.toISOString() ?? null, finished: o.finished.toISOString() })));
  await sql`
    UPDATE mail_messages m
    SET status = v.status, last_error = v.error, next_attempt_at = v.next,
        sent_at = CASE WHEN v.status = 'sent' THEN v.finished ELSE m.sent_at END,
        body_sealed = CASE WHEN v.status = 'pending' THEN m.body_sealed ELSE NULL END,
        lease_until = NULL, lease_token = NULL, updated_at = v.finished
    FROM jsonb_to_recordset(${payload}::jsonb) AS v(id text, token text, status text, error text, next timestamptz, finished timestamptz)
    WHERE m.id = v.id AND m.lease_token = v.token
  `.execute(db);
}

export interface MessageRow {
  id: string;
  kind: string;
  recipient: string;
  status: MailStatus;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  sent_at: Date | null;
}

/** Never the body: it is read only by the sender. */
const LIST_COLUMNS = ['id', 'kind', 'recipient', 'status', 'attempts', 'last_error', 'created_at', 'sent_at'] as const;

/** Platform-wide on purpose (the operators' view): messages are not organization-owned. */
export async function listMessages(db: Db, filter: { status?: MailStatus; kind?: string }, after: Position | null, take: number): Promise<MessageRow[]> {
  let query = db.selectFrom('mail_messages').select(LIST_COLUMNS);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.kind) query = query.where('kind', '=', filter.kind);
  if (after) query = query.where(before('created_at', 'id', after));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(take).execute();
}
