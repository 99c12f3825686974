import { positioned } from '../lib/pagination';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Conflict, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import type { PageRequest } from '../lib/pagination';
import { invalidFilterIndex } from '../events/outbox';
import { emitTestEvent } from './queue';
import { Invalid } from '../lib/errors';
import { newWebhookSecret } from './signing';
import { checkWebhookUrl } from './egress';
import { changed, created, recordChange } from '../audit';
import * as store from './store';

type Webhook = components['schemas']['Webhook'];
type Delivery = components['schemas']['WebhookDelivery'];

/** How long the secret before a rotation keeps signing alongside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

const notFound = () => new NotFound('webhook_not_found', 'The webhook endpoint could not be found.');
const disabled = () => new Conflict('webhook_disabled', 'The webhook endpoint is disabled; enable it first.');

export function toWebhook(row: store.EndpointRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toDelivery(row: store.DeliveryRow): Delivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    nextAttemptAt: row.next_attempt_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
}

/** The schema checks the characters; the shape (`a.b`, `a.*`, `*`) is checked here. */
function checkFilters(events: string[] | undefined): void {
  const bad = events ? invalidFilterIndex(events) : -1;
  if (bad >= 0) throw Invalid.at(['body', 'events', String(bad)], "must be an event type ('member.role_changed'), a prefix ('member.*') or '*'");
}

/** The fields an event or audit entry shows (never a secret). */
function visible(row: store.EndpointRow) {
  return { url: row.url, events: row.events, description: row.description, enabled: row.enabled };
}

export async function createWebhook(deps: AppDeps, membership: Membership, input: { url: string; events: string[]; description?: string; enabled?: boolean }) {
  checkWebhookUrl(deps.outbound, input.url, ['body', 'url']);
  checkFilters(input.events);
  const secret = newWebhookSecret();
  const now = deps.clock.now();
  const row = await deps.db.transaction().execute(async (trx) => {
    const inserted = await store.insertEndpoint(trx, {
      id: newId('webhook'),
      organizationId: membership.organizationId,
      url: input.url,
      events: input.events,
      description: input.description ?? null,
      enabled: input.enabled ?? true,
      secretSealed: deps.secrets.encrypt(secret),
      now,
    });
    await recordChange(trx, deps.audit, { action: 'webhook.created', target: { type: 'webhook', id: inserted.id }, changes: created(visible(inserted)) });
    return inserted;
  });
  return { item: toWebhook(row), secret };
}

export async function listWebhooks(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'webhooks',
    page,
    async (after, take) => positioned(await store.listEndpoints(deps.db, membership.organizationId, after, take)),
    (row) => toWebhook(row),
  );
}

export async function getWebhook(deps: AppDeps, membership: Membership, id: string) {
  const row = await store.findEndpoint(deps.db, membership.organizationId, id);
  if (!row) throw notFound();
  return toWebhook(row);
}

export async function updateWebhook(
  deps: AppDeps,
  membership: Membership,
  id: string,
  input: { url?: string; events?: string[]; description?: string | null; enabled?: boolean },
) {
  if (input.url !== undefined) checkWebhookUrl(deps.outbound, input.url, ['body', 'url']);
  checkFilters(input.events);
  const now = deps.clock.now();
  const row = await deps.db.transaction().execute(async (trx) => {
    const before = await store.findEndpoint(trx, membership.organizationId, id, true);
    if (!before) throw notFound();
    // Enabling again starts a new failure window (3 days) from the next failure.
    const updated = (await store.updateEndpoint(trx, membership.organizationId, id, { ...input, clearFailing: input.enabled === true && !before.enabled }, now))!;
    if (before.enabled && !updated.enabled) await store.failPendingDeliveries(trx, id, 'the endpoint was disabled', now);
    await recordChange(trx, deps.audit, { action: 'webhook.updated', target: { type: 'webhook', id }, changes: changed(visible(before), visible(updated)) });
    return updated;
  });
  return toWebhook(row);
}

export async function deleteWebhook(deps: AppDeps, membership: Membership, id: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const removed = await store.deleteEndpoint(trx, membership.organizationId, id);
    if (!removed) throw notFound();
    await recordChange(trx, deps.audit, { action: 'webhook.deleted', target: { type: 'webhook', id }, changes: {} });
  });
}

export async function rotateWebhookSecret(deps: AppDeps, membership: Membership, id: string): Promise<string> {
  const secret = newWebhookSecret();
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const previousUntil = new Date(now.getTime() + ROTATION_OVERLAP_MS);
    if (!(await store.rotateSecret(trx, membership.organizationId, id, deps.secrets.encrypt(secret), previousUntil, now))) throw notFound();
    await recordChange(trx, deps.audit, { action: 'webhook.secret_rotated', target: { type: 'webhook', id }, changes: { secret: { from: '[redacted]', to: '[redacted]' } } });
  });
  return secret;
}

export async function testWebhook(deps: AppDeps, membership: Membership, id: string) {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const endpoint = await store.findEndpoint(trx, membership.organizationId, id, true);
    if (!endpoint) throw notFound();
    if (!endpoint.enabled) throw disabled();
    const queued = await emitTestEvent(trx, { organizationId: membership.organizationId, endpointId: id, createdAt: now });
    await recordChange(trx, deps.audit, { action: 'webhook.test_sent', target: { type: 'webhook', id }, changes: { eventId: { from: null, to: queued.eventId } } });
    return queued;
  });
}

export async function listDeliveries(deps: AppDeps, membership: Membership, id: string, page: PageRequest) {
  if (!(await store.findEndpoint(deps.db, membership.organizationId, id))) throw notFound();
  return deps.cursors.page(
    'webhook-deliveries',
    page,
    async (after, take) => positioned(await store.listDeliveries(deps.db, membership.organizationId, id, after, take)),
    (row) => toDelivery(row),
  );
}

export async function retryDelivery(deps: AppDeps, membership: Membership, id: string, deliveryId: string) {
  const now = deps.clock.now();
  const row = await deps.db.transaction().execute(async (trx) => {
    const endpoint = await store.findEndpoint(trx, membership.organizationId, id, true);
    if (!endpoint) throw notFound();
    if (!endpoint.enabled) throw disabled();
    const delivery = await store.requeueDelivery(trx, membership.organizationId, id, deliveryId, now);
    if (!delivery) throw new NotFound('delivery_not_found', 'The delivery could not be found.');
    await recordChange(trx, deps.audit, {
      action: 'webhook_delivery.retried',
      target: { type: 'webhook_delivery', id: deliveryId },
      changes: { status: { from: null, to: 'pending' } },
    });
    return delivery;
  });
  return toDelivery(row);
}
