import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock';
import type { WakeSource } from './wakeup';

/**
 * One small job runner for the work the service does off the request path, from the database:
 * webhook deliveries (src/webhooks/delivery-job.ts) and mail (src/mail/sending.ts). Each
 * service process runs one (main.ts starts and stops it); processes share the work through
 * leases: a kind's claim is one short statement (FOR UPDATE SKIP LOCKED, lease re-checked on the
 * row), so a job is never in flight twice at once, and one whose process dies is retried when its
 * lease expires. No transaction is open while a job runs (the embedded database has one
 * connection). Outcomes are written in batches, one statement per kind per pass.
 */
export interface ClaimOptions {
  now: Date;
  leaseUntil: Date;
  /** This claim's lease token: an outcome is recorded only while the row still holds it. */
  token: string;
  batch: number;
}

export interface JobKind<J extends { id: string } = { id: string }> {
  /** Names the kind in logs. */
  readonly name: string;
  /** The channel its jobs are announced on at commit (NOTIFY), which the runner LISTENs to. */
  readonly channel: string;
  /** Jobs in flight at once in one process. */
  readonly concurrency: number;
  /** How often an idle runner claims this kind (a wake-up claims every kind at once). */
  readonly pollMs: number;
  /** Longer than any attempt, so a lease only expires when its holder is gone. */
  readonly leaseMs: number;
  /** Leases up to `batch` due jobs in one short statement (on the kind's own database handle). */
  claim(options: ClaimOptions): Promise<J[]>;
  /** Runs one claimed job and keeps its outcome for `flush`; never throws. */
  attempt(job: J): Promise<void>;
  /** Outcomes waiting to be written. */
  pendingOutcomes(): number;
  /** Writes the kept outcomes and releases their leases. */
  flush(): Promise<void>;
  /** Periodic upkeep (pruning, sweeping); returns how many rows it touched. */
  maintain?(now: Date): Promise<number>;
  /** Releases what the kind holds (connections) once the runner has stopped. */
  close?(): void;
}

/** Periodic upkeep that has no jobs of its own (pruning what expired), run with the kinds' `maintain`. */
export interface Upkeep {
  /** Names it in logs. */
  readonly name: string;
  /** Returns how many rows it touched. */
  maintain(now: Date): Promise<number>;
}

export interface JobRunnerOptions {
  clock: Clock;
  logger: Logger;
  kinds: JobKind[];
  upkeep?: Upkeep[];
  /**
   * Opens a wake-up source (LISTEN, src/jobs/wakeup.ts) when the runner starts; it calls `wake`
   * when jobs are committed. Without one the runner only polls (the embedded database, tests
   * driving the clock).
   */
  wakeups?: (channels: string[], wake: () => void) => WakeSource;
}

/** The shortest time between two passes of the loop that were started by signalled work (see idle()). */
const MIN_PASS_MS = 15;

/** How often (by the injected clock) each kind's maintenance runs. */
const MAINTENANCE_EVERY_MS = 10 * 60_000;

interface KindState {
  kind: JobKind;
  inFlight: Map<string, Promise<void>>;
  /** When this kind was last claimed (real time). */
  lastClaim: number;
  /**
   * The next pass claims this kind again before its poll is due: the last claim filled every free
   * slot (more may be due), or a job finished since (a slot is free, and a kind's own limits, like
   * one endpoint's, may have held back due work).
   */
  again: boolean;
}

export class JobRunner {
  private running = false;
  private loopDone: Promise<void> | null = null;
  private readonly states: KindState[];
  private wake: (() => void) | null = null;
  /** Set by a wake-up (NOTIFY) that came while not idle: the next idle returns at once. */
  private wakeRequested = false;
  private wakeSource: WakeSource | null = null;
  /** When the loop's latest pass began (real time: it paces database passes, not jobs). */
  private lastPass = -Infinity;
  private lastMaintenance = -Infinity;

  constructor(private readonly options: JobRunnerOptions) {
    this.states = options.kinds.map((kind) => ({ kind, inFlight: new Map(), lastClaim: -Infinity, again: false }));
  }

  start(): void {
    if (this.running || this.states.length === 0) return;
    this.running = true;
    this.wakeSource = this.options.wakeups?.(this.states.map((s) => s.kind.channel), () => this.notify()) ?? null;
    this.loopDone = this.loop();
  }

  /** New jobs were committed: claim now rather than at the next poll. */
  notify(): void {
    this.wakeRequested = true;
    this.wake?.();
  }

  /** Stops claiming, lets jobs in flight finish and records them. No timer is left behind. */
  async stop(): Promise<void> {
    this.running = false;
    await this.wakeSource?.close();
    this.wakeSource = null;
    this.wake?.();
    await this.loopDone;
    this.loopDone = null;
    await Promise.all(this.states.flatMap((s) => [...s.inFlight.values()]));
    await this.flush();
    for (const s of this.states) s.kind.close?.();
  }

  /** Claims and runs everything due now, of every kind, until nothing is left (tests drive the clock with this). */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      let claimed = 0;
      for (const s of this.states) claimed += await this.claim(s);
      await Promise.all(this.states.flatMap((s) => [...s.inFlight.values()]));
      await this.flush();
      total += claimed;
      if (claimed === 0) return total;
    }
  }

  /** Every kind's upkeep now; returns the rows touched. */
  async maintain(): Promise<number> {
    const now = this.options.clock.now();
    this.lastMaintenance = now.getTime();
    let touched = 0;
    for (const s of this.states) touched += (await s.kind.maintain?.(now)) ?? 0;
    for (const u of this.options.upkeep ?? []) {
      const n = await u.maintain(now);
      if (n > 0) this.options.logger.info({ upkeep: u.name, touched: n }, 'upkeep done');
      touched += n;
    }
    return touched;
  }

  private async loop(): Promise<void> {
    const { logger, clock } = this.options;
    while (this.running) {
      try {
        if (clock.now().getTime() - this.lastMaintenance >= MAINTENANCE_EVERY_MS) await this.maintain();
        this.lastPass = performance.now();
        // Outcomes first: their leases still count against limits until recorded.
        await this.flush();
        const woken = this.wakeRequested;
        this.wakeRequested = false;
        for (const s of this.states) {
          if (woken || s.again || this.lastPass - s.lastClaim >= s.kind.pollMs) await this.claim(s);
        }
        await this.idle(this.nextPollMs());
      } catch (err) {
        logger.error({ err }, 'job runner pass failed; retrying');
        await this.idle(this.nextPollMs() * 10);
      }
    }
  }

  /** Until the next kind is due for a poll. */
  private nextPollMs(): number {
    const now = performance.now();
    return Math.max(1, Math.min(...this.states.map((s) => s.lastClaim + s.kind.pollMs - now)));
  }

  /**
   * Waits `ms`, or less when a job finishes, jobs are announced or stop() is called. Work that is
   * signalled waits for MIN_PASS_MS since the last pass began, so a stream of notifications and
   * finishing jobs is taken in batches (one claim and one outcome statement for many jobs) rather
   * than one database pass per event.
   */
  private idle(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    const settle = () => Math.max(0, this.lastPass + MIN_PASS_MS - performance.now());
    const signalled = this.states.some((s) => s.kind.pendingOutcomes() > 0) || this.wakeRequested;
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

  private async claim(s: KindState): Promise<number> {
    s.lastClaim = performance.now();
    const free = s.kind.concurrency - s.inFlight.size;
    s.again = false;
    if (free <= 0) return 0;
    const now = this.options.clock.now();
    const claimed = await s.kind.claim({
      now,
      leaseUntil: new Date(now.getTime() + s.kind.leaseMs),
      token: randomBytes(12).toString('base64url'),
      batch: free,
    });
    s.again = claimed.length === free;
    for (const job of claimed) {
      const attempt = this.attempt(s.kind, job).finally(() => {
        s.inFlight.delete(job.id);
        s.again = true;
        this.wake?.();
      });
      s.inFlight.set(job.id, attempt);
    }
    return claimed.length;
  }

  /**
   * A kind records its own failures as outcomes, but one that throws anyway (a bug, a secret that no
   * longer opens) must not end the process as an unhandled rejection, nor stop runOnce: the job
   * keeps its lease, which runs out, and it is claimed again then.
   */
  private async attempt(kind: JobKind, job: { id: string }): Promise<void> {
    try {
      await kind.attempt(job);
    } catch (err) {
      this.options.logger.error({ err, kind: kind.name, jobId: job.id }, 'job attempt threw; it is claimed again when its lease runs out');
    }
  }

  private async flush(): Promise<void> {
    for (const s of this.states) if (s.kind.pendingOutcomes() > 0) await s.kind.flush();
  }
}
