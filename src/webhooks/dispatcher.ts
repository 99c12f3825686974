import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import type { WebhookSettings } from '../settings';
import type { Outbound } from '../outbound';
import { EVENT_RETENTION_MS, pruneEvents } from '../events/service';
import { DISABLE_AFTER_FAILING_MS, retryDelayMs } from './backoff';
import { claimDeliveries, failDeliveriesOfDisabled, markFailing, recordOutcomes, type ClaimedDelivery, type Outcome } from './dispatch-store';
import { disableEndpoint } from './disable';
import { DeliveryFailure, postWebhook } from './egress';
import { webhookHeaders } from './signing';
import type { WakeSource } from './wakeup';

export interface DispatcherOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  /** The egress-policy client for tenant URLs (src/outbound). */
  outbound: Outbound;
  settings: WebhookSettings;
  /**
   * Opens a wake-up source (LISTEN on the outbox channel, src/webhooks/wakeup.ts) when the
   * dispatcher starts; it calls `wake` when deliveries are committed. Without one the dispatcher
   * only polls (the embedded database, tests driving the clock).
   */
  wakeups?: (wake: () => void) => WakeSource;
}

/** The shortest time between two passes of the loop that were started by signalled work (see idle()). */
const MIN_PASS_MS = 15;

/** How long a timed-out attempt keeps its slot after giving up (see attempt()). */
const ABANDONED_SETTLE_MS = 100;

/** How often (by the injected clock) old events are pruned and stray deliveries swept. */
const MAINTENANCE_EVERY_MS = 10 * 60_000;

/**
 * Delivers webhooks from the database, off the request path. Each service process runs one
 * (main.ts starts and stops it); they share the work through leases (dispatch-store.ts), so a
 * delivery attempt is never in flight twice, and one that dies with its process is retried when
 * its lease expires. Attempts run concurrently up to `concurrency`, at most `endpointConcurrency`
 * per endpoint, so a slow endpoint only ever holds its own slots.
 */
export class WebhookDispatcher {
  private running = false;
  private loopDone: Promise<void> | null = null;
  private readonly inFlight = new Map<string, Promise<void>>();
  private outcomes: Outcome[] = [];
  private wake: (() => void) | null = null;
  /** Set by a wake-up (NOTIFY) that came while not idle: the next idle returns at once. */
  private wakeRequested = false;
  private wakeSource: WakeSource | null = null;
  /** When the loop's latest pass began (real time: it paces database passes, not deliveries). */
  private lastPass = -Infinity;
  private lastMaintenance = -Infinity;
  /** A lease outlives the attempt's timeout, so it only expires when its holder is gone. */
  private readonly leaseMs: number;
  private readonly secretCache = new Map<string, string>();

  constructor(private readonly options: DispatcherOptions) {
    this.leaseMs = options.settings.timeoutMs * 2 + 1000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.wakeSource = this.options.wakeups?.(() => this.notify()) ?? null;
    this.loopDone = this.loop();
  }

  /** New deliveries were committed: claim now rather than at the next poll. */
  notify(): void {
    this.wakeRequested = true;
    this.wake?.();
  }

  /** Stops claiming, lets attempts in flight finish and records them. No timer is left behind. */
  async stop(): Promise<void> {
    this.running = false;
    await this.wakeSource?.close();
    this.wakeSource = null;
    this.wake?.();
    await this.loopDone;
    this.loopDone = null;
    await Promise.all(this.inFlight.values());
    await this.flush();
  }

  /** Claims and runs everything due now until nothing is left (tests drive the clock with this). */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.claim(this.options.settings.concurrency - this.inFlight.size);
      await Promise.all(this.inFlight.values());
      await this.flush();
      total += claimed;
      if (claimed === 0) return total;
    }
  }

  /** Deletes events past their 30 days (deliveries go with them) and sweeps deliveries of disabled endpoints. */
  async maintain(): Promise<number> {
    const now = this.options.clock.now();
    this.lastMaintenance = now.getTime();
    await failDeliveriesOfDisabled(this.options.db, now);
    const cutoff = new Date(now.getTime() - EVENT_RETENTION_MS);
    let pruned = 0;
    for (;;) {
      const n = await pruneEvents(this.options.db, cutoff);
      pruned += n;
      if (n === 0) return pruned;
    }
  }

  private async loop(): Promise<void> {
    const { settings, logger, clock } = this.options;
    while (this.running) {
      try {
        if (clock.now().getTime() - this.lastMaintenance >= MAINTENANCE_EVERY_MS) await this.maintain();
        this.lastPass = performance.now();
        // Outcomes first: their leases still count against the endpoints' limits until recorded.
        await this.flush();
        this.wakeRequested = false;
        await this.claim(settings.concurrency - this.inFlight.size);
        await this.idle(settings.pollMs);
      } catch (err) {
        logger.error({ err }, 'webhook dispatch failed; retrying');
        await this.idle(settings.pollMs * 10);
      }
    }
  }

  /**
   * Waits `ms`, or less when an attempt finishes, deliveries are announced or stop() is called.
   * Work that is signalled waits for MIN_PASS_MS since the last pass began, so a stream of
   * notifications and finishing attempts is taken in batches (one claim and one outcome statement
   * for many deliveries) rather than one database pass per event.
   */
  private idle(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    const settle = () => Math.max(0, this.lastPass + MIN_PASS_MS - performance.now());
    const signalled = this.outcomes.length > 0 || this.wakeRequested;
    if (signalled && settle() === 0) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout;
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      timer = setTimeout(done, signalled ? settle() : ms);
      this.wake = () => {
        if (!this.running || settle() === 0) return done();
        clearTimeout(timer);
        timer = setTimeout(done, settle());
      };
    });
  }

  private async claim(free: number): Promise<number> {
    if (free <= 0) return 0;
    const { db, clock, settings } = this.options;
    const now = clock.now();
    const claimed = await claimDeliveries(db, {
      now,
      leaseUntil: new Date(now.getTime() + this.leaseMs),
      token: randomBytes(12).toString('base64url'),
      batch: free,
      perEndpoint: settings.endpointConcurrency,
    });
    for (const delivery of claimed) {
      const attempt = this.attempt(delivery).finally(() => {
        this.inFlight.delete(delivery.id);
        this.wake?.();
      });
      this.inFlight.set(delivery.id, attempt);
    }
    return claimed.length;
  }

  private secret(sealed: string): string {
    let plain = this.secretCache.get(sealed);
    if (plain === undefined) {
      plain = this.options.secrets.decrypt(sealed);
      if (this.secretCache.size > 10_000) this.secretCache.clear();
      this.secretCache.set(sealed, plain);
    }
    return plain;
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const { clock, settings } = this.options;
    const now = clock.now();
    const body = JSON.stringify({ id: d.event_id, type: d.type, organizationId: d.organization_id, createdAt: new Date(d.created_at).toISOString(), data: d.data });
    const secrets = [this.secret(d.secret_sealed)];
    if (d.previous_secret_sealed && d.previous_secret_expires_at && new Date(d.previous_secret_expires_at) > now) secrets.push(this.secret(d.previous_secret_sealed));
    const headers = webhookHeaders(secrets, d.event_id, Math.floor(now.getTime() / 1000), body);
    let code: number | null = null;
    let error: string | null = null;
    try {
      code = await postWebhook(this.options.outbound, d.url, headers, body, settings.timeoutMs);
      if (code >= 300 && code < 400) error = `redirect (${code}) not followed`;
      else if (code < 200 || code >= 300) error = `the endpoint answered ${code}`;
    } catch (err) {
      error = err instanceof DeliveryFailure ? err.message : 'the delivery could not be sent';
      // An abandoned request stays open at the endpoint until its connection's close reaches it;
      // the slot is held a moment longer so the next attempt never overlaps it there.
      if (err instanceof DeliveryFailure && err.timedOut) await new Promise((r) => setTimeout(r, ABANDONED_SETTLE_MS));
    }
    const finished = clock.now();
    const ok = error === null;
    const exhausted = d.attempts >= settings.maxAttempts;
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
  private async flush(): Promise<void> {
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
