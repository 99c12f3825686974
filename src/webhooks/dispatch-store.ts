import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { EventData } from './tables';

/**
 * The dispatcher's SQL. Every statement is short and runs on its own (no transaction is ever open
 * while a delivery's HTTP call is in flight: the embedded database has one connection).
 */
export interface ClaimedDelivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  organization_id: string;
  /** Attempts including this one. */
  attempts: number;
  lease_token: string;
  /** The queuing request's `traceparent` (the delivery span's parent), when it was traced. */
  trace_context: string | null;
  type: string;
  data: EventData;
  created_at: Date;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * Leases up to `batch` due deliveries, at most `perEndpoint` in flight per endpoint (counting
 * live leases of every process), oldest first within an endpoint. FOR UPDATE SKIP LOCKED makes
 * concurrent claims from other processes pass over rows being claimed; a row another claim has
 * just leased is locked in its latest version and the candidate's conditions (pending, due, no
 * live lease) are re-checked on it there, so a delivery is never leased twice at once. The
 * UPDATE then only touches rows this statement holds locked, as an array of primary keys: joined
 * to `picked` (or with those conditions repeated), the planner read every pending delivery (a
 * scan of the table or of the pending index, then a hash join) whenever the table's statistics
 * predated a burst, so a claim cost more the longer the queue (test/api/webhook-claim.test.ts).
 *
 * The endpoints looked at are those with a pending delivery (`queued`: a loose scan of the due
 * index, one probe per such endpoint and one more), not every enabled endpoint: an idle poll
 * costs one probe however many endpoints the organizations have.
 */
export async function claimDeliveries(
  db: Kysely<DB>,
  options: { now: Date; leaseUntil: Date; token: string; batch: number; perEndpoint: number },
): Promise<ClaimedDelivery[]> {
  const { now, leaseUntil, token, batch, perEndpoint } = options;
  const { rows } = await sql<ClaimedDelivery>`
    /* prepared:webhooks_claim */
    WITH RECURSIVE queued AS (
      (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY endpoint_id LIMIT 1)
      UNION ALL
      SELECT (SELECT w.endpoint_id FROM webhook_deliveries w WHERE w.status = 'pending' AND w.endpoint_id > q.endpoint_id ORDER BY w.endpoint_id LIMIT 1)
      FROM queued q WHERE q.endpoint_id IS NOT NULL
    ), candidates AS (
      SELECT c.id, c.next_attempt_at, b.busy,
             row_number() OVER (PARTITION BY e.id ORDER BY c.next_attempt_at, c.id) AS rank
      FROM queued q
      -- LIMIT keeps this a lookup by primary key per queued endpoint: as a join, the planner
      -- hashed every endpoint (a scan of the table) when it expected many queued ones.
      CROSS JOIN LATERAL (SELECT id FROM webhook_endpoints WHERE id = q.endpoint_id AND enabled LIMIT 1) e
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS busy FROM webhook_deliveries y
        WHERE y.endpoint_id = e.id AND y.lease_until IS NOT NULL AND y.lease_until > ${now}::timestamptz
      ) b
      CROSS JOIN LATERAL (
        SELECT x.id, x.next_attempt_at FROM webhook_deliveries x
        WHERE x.endpoint_id = e.id AND x.status = 'pending' AND x.next_attempt_at <= ${now}::timestamptz
          AND (x.lease_until IS NULL OR x.lease_until <= ${now}::timestamptz)
        ORDER BY x.next_attempt_at, x.id
        LIMIT ${perEndpoint}::int
        FOR UPDATE SKIP LOCKED
      ) c
      WHERE b.busy < ${perEndpoint}::int
    ), picked AS (
      SELECT id FROM candidates WHERE rank <= ${perEndpoint}::int - busy ORDER BY next_attempt_at, id LIMIT ${batch}::int
    ), leased AS (
      UPDATE webhook_deliveries d
      SET lease_until = ${leaseUntil}::timestamptz, lease_token = ${token}, attempts = d.attempts + 1, retry_requested = false, updated_at = ${now}::timestamptz
      WHERE d.id = ANY (ARRAY(SELECT id FROM picked))
      RETURNING d.id, d.endpoint_id, d.event_id, d.organization_id, d.attempts, d.lease_token, d.trace_context
    )
    -- Each leased row's event and endpoint by primary key (LIMIT 1: not a join the planner may
    -- turn into a merge or hash over the whole table).
    SELECT d.*, ev.type, ev.data, ev.created_at, e.url, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at
    FROM leased d
    CROSS JOIN LATERAL (SELECT type, data, created_at FROM events WHERE id = d.event_id LIMIT 1) ev
    CROSS JOIN LATERAL (SELECT url, secret_sealed, previous_secret_sealed, previous_secret_expires_at FROM webhook_endpoints WHERE id = d.endpoint_id LIMIT 1) e
  `.execute(db);
  return rows;
}

export interface Outcome {
  id: string;
  token: string;
  endpointId: string;
  organizationId: string;
  status: 'pending' | 'succeeded' | 'failed';
  code: number | null;
  error: string | null;
  next: Date | null;
  finished: Date;
}

/**
 * Writes attempts' outcomes and releases their leases, and ends the failure streak of the
 * endpoints whose latest attempt succeeded, in one statement (one round trip per batch of
 * outcomes). A row whose lease was taken over (it expired and another process claimed it) is left
 * alone. A manual retry that came during the attempt keeps the delivery pending for now. The rows
 * are found by their primary keys as an array: joined to the payload's rows alone, the planner
 * could scan the whole table when its statistics predated a burst (see claimDeliveries).
 */
export async function recordOutcomes(db: Kysely<DB>, outcomes: Outcome[], succeededEndpoints: string[] = []): Promise<void> {
  if (outcomes.length === 0) return;
  const payload = JSON.stringify(
    outcomes.map((o) => ({ id: o.id, token: o.token, status: o.status, code: o.code, error: o.error, next: o.next?.toISOString() ?? null, finished: o.finished.toISOString() })),
  );
  await sql`
    /* prepared:webhooks_outcomes */
    WITH recorded AS (
      UPDATE webhook_deliveries d
      SET status = CASE WHEN d.retry_requested THEN 'pending' ELSE v.status END,
          next_attempt_at = CASE WHEN d.retry_requested THEN v.finished ELSE v.next END,
          last_status_code = v.code, last_error = v.error,
          lease_until = NULL, lease_token = NULL, retry_requested = false, updated_at = v.finished
      FROM jsonb_to_recordset(${payload}::jsonb) AS v(id text, token text, status text, code int, error text, next timestamptz, finished timestamptz)
      WHERE d.id = ANY (${outcomes.map((o) => o.id)}::text[]) AND d.id = v.id AND d.lease_token = v.token
    ), cleared AS (
      UPDATE webhook_endpoints SET failing_since = NULL
      WHERE id = ANY(${succeededEndpoints}::text[]) AND failing_since IS NOT NULL
    )
    SELECT 1
  `.execute(db);
}

/** A failure starts the streak (or continues it); returns each endpoint's streak start. */
export async function markFailing(db: Kysely<DB>, endpointIds: string[], now: Date): Promise<{ id: string; organization_id: string; failing_since: Date }[]> {
  if (endpointIds.length === 0) return [];
  return db
    .updateTable('webhook_endpoints')
    .set({ failing_since: sql<Date>`coalesce(failing_since, ${now}::timestamptz)` })
    .where('id', 'in', endpointIds)
    .where('enabled', '=', true)
    .returning(['id', 'organization_id', 'failing_since'])
    .execute() as Promise<{ id: string; organization_id: string; failing_since: Date }[]>;
}

/** Pending deliveries of endpoints that are disabled (a race with disabling) end as failed. */
export async function failDeliveriesOfDisabled(db: Kysely<DB>, now: Date): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: 'the endpoint was disabled', next_attempt_at: null, updated_at: now })
    .where('status', '=', 'pending')
    .where('endpoint_id', 'in', (eb) => eb.selectFrom('webhook_endpoints').select('id').where('enabled', '=', false))
    .execute();
}
