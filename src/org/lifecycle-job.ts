import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import { sha256Hex, type SecretBox } from '../lib/crypto';
import type { ClaimOptions, JobKind } from '../jobs/runner';
import type { MailSettings, OrgLifecycleSettings, RateLimitSettings } from '../settings';
import { preparePlatformNotices, queuePreparedNotices } from '../mail/queue';
import { PURGE_STEPS } from './registry';
import * as store from './lifecycle-store';

export interface LifecycleJobOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  settings: { orgLifecycle: OrgLifecycleSettings; mail: MailSettings; rateLimits: RateLimitSettings };
}

/** Members mailed per transaction. */
const NOTICE_BATCH = 200;
/** Longer than any one batch; renewed before each. */
const LEASE_MS = 5 * 60_000;

/**
 * Organization deletion's background work as a kind of job (src/jobs/runner.ts), for any
 * process: each deleted organization is leased (one short statement, FOR UPDATE SKIP LOCKED), its
 * members are mailed in batches (each batch and the cursor it advances in one transaction), and
 * once `purge_at` has passed its rows are removed step by step from the registry (./registry.ts),
 * at most `ORG_PURGE_BATCH` rows per statement (fewer when slow: `purge`), each statement its own
 * short transaction. Every step is
 * idempotent and the lease is renewed before each batch, so a process that dies leaves work the
 * next claim resumes after the lease expires; a restore clears the lease and the work stops at
 * its next batch. The last transaction deletes the organization row and writes its tombstone.
 */
export class OrganizationLifecycle implements JobKind<store.LifecycleJob> {
  readonly name = 'organization-deletion';
  /** Nothing announces this work: the runner polls. */
  readonly channel = 'org_lifecycle';
  readonly concurrency = 2;
  readonly pollMs = 10_000;
  readonly leaseMs = LEASE_MS;

  constructor(private readonly options: LifecycleJobOptions) {}

  claim(claim: ClaimOptions): Promise<store.LifecycleJob[]> {
    return store.claimLifecycleJobs(this.options.db, claim);
  }

  async attempt(job: store.LifecycleJob): Promise<void> {
    const { logger, clock, db } = this.options;
    try {
      if (!job.noticesDone && !(await this.sendNotices(job))) return;
      if (job.purgeAt.getTime() <= clock.now().getTime()) await this.purge(job);
      else await store.releaseLease(db, job.id, job.token);
    } catch (err) {
      // The lease expires and the next claim resumes from what was committed.
      logger.error({ err, organizationId: job.id }, 'organization lifecycle work failed; resuming after its lease expires');
    }
  }

  pendingOutcomes(): number {
    return 0;
  }

  async flush(): Promise<void> {}

  private renew(job: store.LifecycleJob): Promise<boolean> {
    return store.extendLease(this.options.db, job.id, job.token, new Date(this.options.clock.now().getTime() + LEASE_MS));
  }

  /**
   * Mails every active member once; false when the lease was lost (restored, or taken over). Each
   * batch is read and its mails rendered and sealed before its transaction, which only records
   * the cursor (under the lease) and writes the batch in one statement: the transaction stays
   * short however busy the process is (bench scenario 20 measures it).
   */
  private async sendNotices(job: store.LifecycleJob): Promise<boolean> {
    const { db, secrets, clock, settings } = this.options;
    let after = job.noticesAfter;
    for (;;) {
      if (!(await this.renew(job))) return false;
      const members = await store.membersToNotify(db, job.id, after, NOTICE_BATCH);
      const last = members.at(-1)?.id ?? after;
      const messages = preparePlatformNotices(
        { secrets, clock, settings },
        members.map((m) => ({
          kind: 'security_notice' as const,
          to: m.email,
          title: `${job.name} is scheduled for deletion`,
          lines: [
            `The organization ${job.name} was scheduled for deletion by its owner. Its data will be deleted for good on ${job.purgeAt.toISOString()}.`,
            'Until then its owner can export its data or restore it; your account stays.',
          ],
        })),
      );
      const done = members.length < NOTICE_BATCH ? clock.now() : null;
      const kept = await db.transaction().execute(async (trx) => {
        if (!(await store.advanceNotices(trx, job.id, job.token, last, done))) return false;
        await queuePreparedNotices(trx, messages);
        return true;
      });
      if (!kept) return false;
      after = last;
      if (done) return true;
    }
  }

  /**
   * Each step in statements of at most ORG_PURGE_BATCH rows, fewer when they are slow: the next
   * statement's size follows the last one's time per row, aimed at PURGE_STATEMENT_MS, starting
   * each step small and at most doubling (a member's row costs one foreign-key check per
   * referencing table, an audit entry's none), so no statement holds its locks for long.
   */
  private async purge(job: store.LifecycleJob): Promise<void> {
    const { db, clock, settings } = this.options;
    const most = settings.orgLifecycle.purgeBatch;
    for (const step of PURGE_STEPS) {
      if (step.kind === 'keep' || step.table === 'organizations') continue;
      let limit = Math.min(most, FIRST_PURGE_STATEMENT);
      for (;;) {
        if (!(await this.renew(job))) return;
        const started = performance.now();
        const removed = await store.purgeBatch(db, step, job.id, limit);
        if (removed < limit) break;
        limit = nextPurgeLimit(limit, performance.now() - started, most);
      }
    }
    await db.transaction().execute(async (trx) => {
      if (!(await store.deleteOrganizationRow(trx, job.id, job.token))) return;
      await store.insertTombstone(trx, { organizationId: job.id, nameSha256: sha256Hex(job.name), deletedAt: job.deletedAt, deletedByUserId: job.deletedByUserId, purgedAt: clock.now() });
    });
  }
}

/** The time one purge statement aims at. */
export const PURGE_STATEMENT_MS = 100;
/** Rows of a step's first statement (when ORG_PURGE_BATCH allows as many). */
const FIRST_PURGE_STATEMENT = 100;

/** Rows for the next statement of a step: as many as fit PURGE_STATEMENT_MS at the last one's pace, at most twice as many, at least 1. */
export function nextPurgeLimit(limit: number, elapsedMs: number, most: number): number {
  const fitting = Math.floor((limit * PURGE_STATEMENT_MS) / Math.max(elapsedMs, 1));
  return Math.max(1, Math.min(most, limit * 2, fitting));
}
