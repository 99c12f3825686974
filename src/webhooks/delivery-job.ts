import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import type { WebhookSettings } from '../settings';
import type { Outbound } from '../outbound';
import { EVENT_RETENTION_MS, pruneEvents } from '../events/service';
import { retryDelayMs } from '../jobs/backoff';
import { metrics } from '../observability/metrics';
import { tracing } from '../observability/tracing';
import { claimDeliveries, failDeliveriesOfDisabled, markFailing, recordOutcomes, type ClaimedDelivery, type Outcome } from './dispatch-store';
import { disableEndpoint } from './disable';
import { DeliveryFailure, postWebhook } from './egress';
import { webhookHeaders } from './signing';
import type { ClaimOptions, JobKind } from '../jobs/runner';
import { DELIVERIES_CHANNEL } from './queue';

export interface WebhookJobOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  /** The egress-policy client for tenant URLs (src/outbound). */
  outbound: Outbound;
  settings: WebhookSettings;
}

/** The endpoint's sealed secret does not open with this process's SECRET_KEY. */
class UnreadableSecret extends Error {
  constructor() {
    super("the endpoint's signing secret could not be read");
  }
}

/** How long a timed-out attempt keeps its slot after giving up (see attempt()). */
const ABANDONED_SETTLE_MS = 100;

/** An endpoint whose attempts have all failed for this long is disabled (event webhook.disabled). */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3_600_000;

/**
 * Webhook deliveries as a kind of job (src/jobs/runner.ts runs it with mail). Attempts run concurrently up to
 * WEBHOOK_CONCURRENCY, at most WEBHOOK_ENDPOINT_CONCURRENCY per endpoint (the claim counts every
 * process's live leases), so a slow endpoint only ever holds its own slots. Outcomes also keep
 * each endpoint's failure streak, and an endpoint failing for 3 days is disabled.
 */
export class WebhookDeliveries implements JobKind<ClaimedDelivery> {
  readonly name = 'webhook';
  readonly channel = DELIVERIES_CHANNEL;
  readonly concurrency: number;
  readonly pollMs: number;
  /** A lease outlives the attempt's timeout, so it only expires when its holder is gone. */
  readonly leaseMs: number;
  private outcomes: Outcome[] = [];
  private readonly secretCache = new Map<string, string>();

  constructor(private readonly options: WebhookJobOptions) {
    this.concurrency = options.settings.concurrency;
    this.pollMs = options.settings.pollMs;
    this.leaseMs = options.settings.timeoutMs * 2 + 1000;
  }

  claim(claim: ClaimOptions): Promise<ClaimedDelivery[]> {
    return claimDeliveries(this.options.db, { ...claim, perEndpoint: this.options.settings.endpointConcurrency });
  }

  pendingOutcomes(): number {
    return this.outcomes.length;
  }

  /** Deletes events past their 30 days (deliveries go with them) and sweeps deliveries of disabled endpoints. */
  async maintain(now: Date): Promise<number> {
    const { db } = this.options;
    await failDeliveriesOfDisabled(db, now);
    const cutoff = new Date(now.getTime() - EVENT_RETENTION_MS);
    let pruned = 0;
    for (;;) {
      const n = await pruneEvents(db, cutoff);
      pruned += n;
      if (n === 0) return pruned;
    }
  }

  /** The endpoint's secret, and its previous one during the 24 h after a rotation. */
  private signingSecrets(d: ClaimedDelivery, now: Date): string[] {
    const secrets = [this.secret(d.secret_sealed)];
    if (d.previous_secret_sealed && d.previous_secret_expires_at && new Date(d.previous_secret_expires_at) > now) secrets.push(this.secret(d.previous_secret_sealed));
    return secrets;
  }

  private secret(sealed: string): string {
    let plain = this.secretCache.get(sealed);
    if (plain === undefined) {
      try {
        plain = this.options.secrets.decrypt(sealed);
      } catch {
        throw new UnreadableSecret();
      }
      if (this.secretCache.size > 10_000) this.secretCache.clear();
      this.secretCache.set(sealed, plain);
    }
    return plain;
  }

  async attempt(d: ClaimedDelivery): Promise<void> {
    const { clock, settings } = this.options;
    const now = clock.now();
    const body = JSON.stringify({ id: d.event_id, type: d.type, organizationId: d.organization_id, createdAt: new Date(d.created_at).toISOString(), data: d.data });
    let code: number | null = null;
    let error: string | null = null;
    try {
      const headers = webhookHeaders(this.signingSecrets(d, now), d.event_id, Math.floor(now.getTime() / 1000), body);
      const post = () => postWebhook(this.options.outbound, d.url, headers, body, settings.timeoutMs);
      code = tracing
        ? await tracing.inJobSpan('webhook.deliver', d.trace_context, { 'webhook.delivery.id': d.id, 'webhook.event.type': d.type, 'org.id': d.organization_id, 'webhook.attempt': d.attempts }, post)
        : await post();
      if (code >= 300 && code < 400) error = `redirect (${code}) not followed`;
      else if (code < 200 || code >= 300) error = `the endpoint answered ${code}`;
    } catch (err) {
      if (err instanceof UnreadableSecret) {
        // Nothing is sent unsigned: the attempt fails like any other and is retried on the usual schedule,
        // so deliveries resume once the operator restores the SECRET_KEY the secret was sealed with.
        this.options.logger.error({ endpointId: d.endpoint_id, deliveryId: d.id }, 'webhook signing secret could not be decrypted (SECRET_KEY changed?)');
        error = err.message;
      } else error = err instanceof DeliveryFailure ? err.message : 'the delivery could not be sent';
      // An abandoned request stays open at the endpoint until its connection's close reaches it;
      // the slot is held a moment longer so the next attempt never overlaps it there.
      if (err instanceof DeliveryFailure && err.timedOut) await new Promise((r) => setTimeout(r, ABANDONED_SETTLE_MS));
    }
    const finished = clock.now();
    const ok = error === null;
    const exhausted = d.attempts >= settings.maxAttempts;
    metrics?.webhookAttempts.inc({ outcome: ok ? 'succeeded' : exhausted ? 'failed' : 'retrying' });
    this.outcomes.push({
      id: d.id,
      token: d.lease_token,
      endpointId: d.endpoint_id,
      organizationId: d.organization_id,
      status: ok ? 'succeeded' : exhausted ? 'failed' : 'pending',
      code,
      error,
      next: ok || exhausted ? null : new Date(finished.getTime() + retryDelayMs(d.attempts)),
      finished,
    });
    if (!ok) this.options.logger.info({ deliveryId: d.id, endpointId: d.endpoint_id, attempt: d.attempts, error }, 'webhook delivery failed');
  }

  /** Records finished attempts, then the endpoints' failure streaks (disabling after 3 days). */
  async flush(): Promise<void> {
    if (this.outcomes.length === 0) return;
    const batch = this.outcomes;
    this.outcomes = [];
    const { db, clock } = this.options;
    // The latest outcome of each endpoint decides its streak.
    const latest = new Map<string, Outcome>();
    for (const o of batch) if ((latest.get(o.endpointId)?.finished.getTime() ?? -1) <= o.finished.getTime()) latest.set(o.endpointId, o);
    const succeeded = [...latest.values()].filter((o) => o.status === 'succeeded').map((o) => o.endpointId);
    const failed = [...latest.values()].filter((o) => o.status !== 'succeeded').map((o) => o.endpointId);
    await recordOutcomes(db, batch, succeeded);
    const now = clock.now();
    for (const streak of await markFailing(db, failed, now)) {
      if (now.getTime() - new Date(streak.failing_since).getTime() >= DISABLE_AFTER_FAILING_MS) {
        await disableEndpoint(db, clock, streak.organization_id, streak.id);
        this.options.logger.warn({ endpointId: streak.id }, 'webhook endpoint disabled after failing for 3 days');
      }
    }
  }
}
