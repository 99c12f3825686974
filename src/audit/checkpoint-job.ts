import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import type { AuditSettings } from '../settings';
import { newId } from '../lib/ids';
import type { ClaimOptions, JobKind } from '../jobs/runner';
import { checkpointOrigin, signCheckpoint } from './checkpoint-note';
import { dueHeads, insertCheckpoints, type DueHead, type NewCheckpoint } from './checkpoint-store';
import { auditKey } from './signing-key';

export interface CheckpointJobOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  publicBaseUrl: string;
  settings: Pick<AuditSettings, 'checkpointEvery' | 'checkpointIntervalMs'>;
}

/** How often an idle runner looks for organizations due for a checkpoint. */
const POLL_MS = 5000;

/**
 * Checkpoints as a kind of job (src/jobs/runner.ts): each pass reads the chain heads due for one
 * (AUDIT_CHECKPOINT_EVERY entries past the latest, or AUDIT_CHECKPOINT_INTERVAL since it while
 * new entries exist; an organization's first one at the first pass after its first entry), signs
 * each head, and stores the notes in one statement. Nothing is added to the audited write itself:
 * the job reads the heads those writes leave. Several processes may sign the same head: the
 * signature is deterministic and the second copy is dropped, so no lease is needed.
 */
export class AuditCheckpoints implements JobKind<DueHead> {
  readonly name = 'audit-checkpoint';
  /** Nothing announces checkpoints: the runner polls for them. */
  readonly channel = 'audit_checkpoints';
  readonly concurrency = 64;
  readonly pollMs = POLL_MS;
  readonly leaseMs = 60_000;
  private signed: NewCheckpoint[] = [];
  /** Organizations claimed and not yet stored, so a claim in between does not sign them twice. */
  private readonly open = new Set<string>();

  constructor(private readonly options: CheckpointJobOptions) {}

  async claim(claim: ClaimOptions): Promise<DueHead[]> {
    const { settings, db } = this.options;
    const heads = await dueHeads(db, { every: settings.checkpointEvery, cutoff: new Date(claim.now.getTime() - settings.checkpointIntervalMs), batch: claim.batch, skip: [...this.open] });
    for (const head of heads) this.open.add(head.id);
    return heads;
  }

  async attempt(head: DueHead): Promise<void> {
    const { db, secrets, clock, publicBaseUrl, logger } = this.options;
    try {
      const key = await auditKey({ db, secrets, clock, publicBaseUrl });
      const note = signCheckpoint(key, { origin: checkpointOrigin(publicBaseUrl, head.id), count: BigInt(head.seq), headHex: head.hash });
      this.signed.push({ id: newId('auditCheckpoint'), organizationId: head.id, seq: head.seq, head: head.hash, note, createdAt: clock.now() });
    } catch (err) {
      this.open.delete(head.id);
      logger.error({ err, organizationId: head.id }, 'audit checkpoint could not be signed; retrying at the next pass');
    }
  }

  pendingOutcomes(): number {
    return this.signed.length;
  }

  async flush(): Promise<void> {
    const batch = this.signed;
    this.signed = [];
    try {
      await insertCheckpoints(this.options.db, batch);
    } finally {
      for (const c of batch) this.open.delete(c.organizationId);
    }
  }
}
