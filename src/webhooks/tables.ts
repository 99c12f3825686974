import type { Generated } from 'kysely';
import type { Json, Timestamp } from '../db/columns';

/** The outbox: one row per change, written in the change's transaction (src/events/outbox.ts; its deliveries by src/webhooks/queue.ts). */
export interface EventsTable {
  id: string;
  organization_id: string;
  type: string;
  data: Json<EventData>;
  created_at: Timestamp;
}

export interface EventData {
  target: { type: string; id: string } | null;
  changes: Record<string, unknown>;
}

export interface WebhookEndpointsTable {
  id: string;
  organization_id: string;
  url: string;
  /** Filters: exact event types, `prefix.*` or `*`. */
  events: string[];
  description: string | null;
  enabled: boolean;
  /** `whsec_…` sealed with SecretBox; never selected outside signing. */
  secret_sealed: string;
  /** The secret before the last rotation, still signing until `previous_secret_expires_at`. */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Timestamp | null;
  /** Start of the current run of failed attempts (null after a success). */
  failing_since: Timestamp | null;
  /** Paused while its organization is being deleted (src/webhooks/lifecycle.ts); `enabled` stays the owner's choice. */
  organization_locked: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  id: string;
  organization_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: Generated<number>;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Timestamp | null;
  /** Set while a dispatcher holds the delivery; an expired lease means the holder died. */
  lease_until: Timestamp | null;
  lease_token: string | null;
  /** W3C trace context (`traceparent`) of the request that queued it, when there was one. */
  trace_context: Generated<string | null>;
  /** A manual retry that came while an attempt was in flight. */
  retry_requested: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookTables {
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
}
