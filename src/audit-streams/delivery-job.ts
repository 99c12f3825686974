import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import type { Outbound } from '../outbound';
import type { ClaimOptions, JobKind } from '../jobs/runner';
import { retryDelayMs } from '../jobs/backoff';
import { recordChange, streamBatch, systemContext, type StreamBatch } from '../audit';
import { claimStreams, recordAccepted, recordFailed, recordPaused, type ClaimedStream } from './dispatch-store';
import { SINKS, type SinkOutcome } from './sinks';
import { RecordJsonCache } from './serialize';
import { EntryWindows } from './entry-window';
import type { StreamSecrets } from './config';

export interface StreamJobOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  /** The egress-policy client: every sink is a tenant URL (src/outbound). */
  outbound: Outbound;
  /** AUDIT_STREAM_TIMEOUT_MS. */
  timeoutMs: number;
}

/** Entries per batch (docs/audit.md, "Streams"). */
export const STREAM_BATCH = 500;

/**
 * After a batch shorter than STREAM_BATCH the stream waits this long before its next one: under a
 * steady write load a stream due again at once sent a few entries a batch, its whole cycle (claim,
 * read, send, record) per handful of entries on the cores the writes need (bench scenario 8, two
 * streams: audit on ÷ off p50 1.39 without this wait). A full batch goes on at once (a backlog).
 */
export const STREAM_LINGER_MS = 1000;

/** A stream whose batches have all failed for this long is paused (as webhooks are disabled). */
export const PAUSE_AFTER_FAILING_MS = 3 * 24 * 3_600_000;

interface Attempted {
  stream: ClaimedStream;
  batch: StreamBatch;
  outcome: SinkOutcome;
  finished: Date;
}

/**
 * Audit streams as a kind of job (src/jobs/runner.ts): a claim leases streams with entries or
 * checkpoints past their cursor; an attempt reads the next batch after the cursor (up to 500
 * entries with their checkpoints), hands it to the stream's sink, and keeps the outcome; the
 * flush moves the cursor only for accepted batches. So delivery is in order and at least once (a
 * process dying after the sink accepted, before the flush, sends that batch again), a failing
 * sink holds only its own stream's slot, and nothing here waits on, or blocks, an audited write.
 */
export class AuditStreamDeliveries implements JobKind<ClaimedStream> {
  readonly name = 'audit-stream';
  /** Nothing announces new entries to streams (it would cost every audited write): the runner polls. */
  readonly channel = 'audit_streams';
  readonly concurrency = 16;
  readonly pollMs = 1000;
  readonly leaseMs: number;
  private outcomes: Attempted[] = [];
  /** Each record serialized once for all the streams this process delivers, in slices that yield. */
  private readonly json = new RecordJsonCache();
  /** Each organization's latest entries, read once for all its streams in this process. */
  private readonly windows = new EntryWindows();

  constructor(private readonly options: StreamJobOptions) {
    this.leaseMs = options.timeoutMs * 2 + 1000;
  }

  claim(claim: ClaimOptions): Promise<ClaimedStream[]> {
    return claimStreams(this.options.db, claim);
  }

  pendingOutcomes(): number {
    return this.outcomes.length;
  }

  async attempt(stream: ClaimedStream): Promise<void> {
    const { db, clock, secrets, outbound, timeoutMs } = this.options;
    let batch: StreamBatch = { records: [], lastSeq: stream.cursor_seq, lastId: null, lastCheckpointSeq: stream.checkpoint_seq };
    let outcome: SinkOutcome;
    try {
      batch = await streamBatch(db, stream.organization_id, stream.cursor_seq, stream.checkpoint_seq, STREAM_BATCH, stream.locked_through_seq, this.windows.reader(db, stream.organization_id));
      if (batch.records.length === 0) outcome = { ok: true };
      else {
        const sink = SINKS[stream.type];
        const plain = JSON.parse(secrets.decrypt(stream.secrets_sealed)) as StreamSecrets;
        const json = await this.json.serialize(batch.records);
        outcome = await sink({ streamId: stream.id, organizationId: stream.organization_id, config: stream.config, secrets: plain, records: batch.records, json, outbound, timeoutMs, now: clock.now() });
      }
    } catch (err) {
      this.options.logger.error({ err, streamId: stream.id }, 'audit stream batch could not be prepared');
      outcome = { ok: false, refused: false, error: 'the batch could not be prepared' };
    }
    if (!outcome.ok) this.options.logger.info({ streamId: stream.id, error: outcome.error }, 'audit stream batch failed');
    this.outcomes.push({ stream, batch, outcome, finished: clock.now() });
  }

  async flush(): Promise<void> {
    const done = this.outcomes;
    this.outcomes = [];
    for (const a of done) {
      try {
        await this.record(a);
      } catch (err) {
        // The lease expires and the batch is sent again: at least once, never skipped.
        this.options.logger.error({ err, streamId: a.stream.id }, 'audit stream outcome could not be recorded');
      }
    }
  }

  private async record({ stream, batch, outcome, finished }: Attempted): Promise<void> {
    const { db } = this.options;
    const token = stream.lease_token;
    if (outcome.ok) {
      await recordAccepted(db, { id: stream.id, token, lastSeq: batch.lastSeq, lastId: batch.lastId, lastCheckpointSeq: batch.lastCheckpointSeq, delivered: batch.records.length > 0, now: finished, next: batch.records.length >= STREAM_BATCH ? finished : new Date(finished.getTime() + STREAM_LINGER_MS) });
      return;
    }
    const failingFor = stream.failing_since ? finished.getTime() - new Date(stream.failing_since).getTime() : 0;
    if (outcome.refused || failingFor >= PAUSE_AFTER_FAILING_MS) {
      const error = outcome.refused ? outcome.error : `${outcome.error}; paused after failing for 3 days`;
      await this.pause(stream, token, error, finished);
      return;
    }
    await recordFailed(db, { id: stream.id, token, error: outcome.error, next: new Date(finished.getTime() + retryDelayMs(stream.failures + 1)), now: finished });
  }

  /** Pauses the stream and audits it as the system (which also writes the event `audit_stream.paused`). */
  private async pause(stream: ClaimedStream, token: string, error: string, now: Date): Promise<void> {
    const { db, clock, logger } = this.options;
    await db.transaction().execute(async (trx) => {
      if (!(await recordPaused(trx, { id: stream.id, organizationId: stream.organization_id, token, error, now }))) return;
      await recordChange(trx, systemContext(clock, stream.organization_id), {
        action: 'audit_stream.paused',
        target: { type: 'audit_stream', id: stream.id },
        changes: { state: { from: stream.failing_since ? 'failing' : 'active', to: 'paused' }, lastError: { from: null, to: error } },
      });
    });
    logger.warn({ streamId: stream.id, error }, 'audit stream paused');
  }
}
