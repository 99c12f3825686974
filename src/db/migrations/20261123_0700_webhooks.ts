import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Events (a transactional outbox: written in the transaction of the change they describe) and
 * webhook endpoints with their deliveries.
 *
 * A delivery row is created for every enabled endpoint whose filter matches, in the same
 * transaction as the event, so nothing between "committed" and "queued" can be lost. Dispatchers
 * in every service process claim due deliveries with a lease (`lease_until`, `lease_token`) set by
 * one short statement using FOR UPDATE SKIP LOCKED: no transaction stays open during the HTTP
 * call, and a process that dies mid-delivery leaves a lease that simply expires.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE events (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz(3) NOT NULL
    );
    CREATE INDEX events_org_page_idx ON events (organization_id, created_at DESC, id DESC);
    CREATE INDEX events_org_type_page_idx ON events (organization_id, type text_pattern_ops, created_at DESC, id DESC);
    CREATE INDEX events_created_idx ON events (created_at);

    CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      url text NOT NULL,
      events text[] NOT NULL,
      description text,
      enabled boolean NOT NULL,
      secret_sealed text NOT NULL,
      previous_secret_sealed text,
      previous_secret_expires_at timestamptz(3),
      failing_since timestamptz(3),
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX webhook_endpoints_org_page_idx ON webhook_endpoints (organization_id, created_at DESC, id DESC);

    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      -- No foreign key on purpose: its check would take a KEY SHARE lock on the endpoint row in
      -- every event's transaction, which deadlocks against a transaction that holds that row
      -- (PATCH, DELETE) and waits for the organization's audit chain head. Deleting an endpoint
      -- deletes its deliveries in the same transaction (src/webhooks/store.ts).
      endpoint_id text NOT NULL,
      event_id text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      event_type text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      last_status_code integer,
      last_error text,
      next_attempt_at timestamptz(3),
      lease_until timestamptz(3),
      lease_token text,
      -- A manual retry that arrived while an attempt was in flight: the outcome leaves it pending.
      retry_requested boolean NOT NULL DEFAULT false,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX webhook_deliveries_page_idx ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
    -- The dispatcher's claim: due pending deliveries of one endpoint, oldest first.
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status = 'pending';
    -- Deliveries in flight (leased), counted per endpoint for its concurrency limit.
    CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (endpoint_id) WHERE lease_until IS NOT NULL;
    CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
  `,
  );
}
