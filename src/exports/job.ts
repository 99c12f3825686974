import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import type { ClaimOptions, JobKind } from '../jobs/runner';
import type { MailSettings, RateLimitSettings } from '../settings';
import { queueNotice } from '../mail/queue';
import { auditCheckpointLines, auditLogLines, checkpointHeadNow } from '../audit/archive';
import { camel, EXPORT_FILES, isAuditFile, isTableFile } from './files';
import { tableLines } from './rows';
import { CHUNK_BYTES, writeZip, type WrittenFile, type ZipEntry } from './zip';
import * as store from './store';

export interface ExportJobOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  publicBaseUrl: string;
  settings: { mail: MailSettings; rateLimits: RateLimitSettings };
  /** Bytes per stored chunk (tests make it small to see a zip of several). */
  chunkBytes?: number;
}

/** How long a ready export can be downloaded. */
export const EXPORT_TTL_MS = 7 * 24 * 3600_000;
/** Longer than writing one chunk; renewed before each. */
const LEASE_MS = 5 * 60_000;
const FAILED = 'The export could not be built. Request a new one; if it fails again, contact support.';

class LeaseLost extends Error {}

/** The manifest's `withheld`: per file, the fields left out as secrets. */
function withheld(): Record<string, string[]> {
  const out: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  for (const entry of EXPORT_FILES) if (isTableFile(entry) && entry.withheld?.length) out[entry.file] = entry.withheld.map(camel);
  return out;
}

/**
 * Organization exports as a kind of job (src/jobs/runner.ts), for any process: a pending export is
 * leased (one short statement, FOR UPDATE SKIP LOCKED), a checkpoint is signed at the audit
 * chain's head, and the zip (./zip.ts) is written from the files of ./files.ts into the
 * database in chunks, the lease renewed before each. Ready: size, SHA-256, expiry and a mail to
 * the requester, in one transaction. Failed: the status and the removal of every chunk, in one
 * transaction, so nothing half-written is ever served. A process that dies leaves a running export
 * whose lease expires; the next claim removes its chunks and builds it again.
 */
export class OrganizationExports implements JobKind<store.ExportJob> {
  readonly name = 'org-export';
  /** Requests announce themselves on it (NOTIFY at commit). */
  readonly channel = 'org_exports';
  readonly concurrency = 1;
  readonly pollMs = 5000;
  readonly leaseMs = LEASE_MS;

  constructor(private readonly options: ExportJobOptions) {}

  claim(claim: ClaimOptions): Promise<store.ExportJob[]> {
    return store.claimExports(this.options.db, claim);
  }

  async attempt(job: store.ExportJob): Promise<void> {
    const { db, clock, logger } = this.options;
    try {
      const written = await this.build(job);
      await db.transaction().execute(async (trx) => {
        const now = clock.now();
        const expiresAt = new Date(now.getTime() + EXPORT_TTL_MS);
        if (!(await store.finishExport(trx, job.id, job.token, { status: 'ready', size: written.size, sha256: written.sha256, expiresAt, now }))) throw new LeaseLost();
        await this.mailRequester(trx, job, { size: written.size, sha256: written.sha256, expiresAt });
      });
    } catch (err) {
      if (err instanceof LeaseLost) return;
      logger.error({ err, exportId: job.id, organizationId: job.organizationId }, 'organization export failed');
      try {
        await db.transaction().execute(async (trx) => {
          if (await store.finishExport(trx, job.id, job.token, { status: 'failed', error: FAILED, now: clock.now() })) await store.deleteChunks(trx, job.id);
        });
      } catch (inner) {
        // The lease expires and the next claim starts over (its first step removes these chunks).
        logger.error({ err: inner, exportId: job.id }, 'organization export failure could not be recorded');
      }
    }
  }

  pendingOutcomes(): number {
    return 0;
  }

  async flush(): Promise<void> {}

  /** Removes the zips of expired exports (their rows stay, for the list). */
  async maintain(now: Date): Promise<number> {
    const { db } = this.options;
    const ids = await store.expiredExports(db, now, 50);
    for (const id of ids) {
      await store.deleteChunks(db, id);
      await store.markErased(db, id, now);
    }
    return ids.length;
  }

  private async build(job: store.ExportJob) {
    const { db, clock, secrets, publicBaseUrl } = this.options;
    const { organizationId } = job;
    await store.deleteChunks(db, job.id);
    const throughSeq = await checkpointHeadNow({ db, secrets, clock, publicBaseUrl }, organizationId);
    const entries: ZipEntry[] = [];
    for (const entry of EXPORT_FILES) {
      if (isTableFile(entry)) entries.push({ name: `${entry.file}.ndjson`, lines: () => tableLines(db, entry, organizationId) });
      else if (isAuditFile(entry)) {
        const lines = entry.audit === 'log' ? auditLogLines : auditCheckpointLines;
        entries.push({ name: `${entry.file}.ndjson`, lines: () => lines(db, organizationId, throughSeq) });
      }
    }
    const createdAt = job.createdAt;
    const manifest = (files: WrittenFile[]) =>
      Buffer.from(`${JSON.stringify({ version: 1, organizationId, createdAt: createdAt.toISOString(), files, withheld: withheld() }, null, 2)}\n`, 'utf8');
    let seq = 0;
    return writeZip({ entries, mtime: createdAt, manifest, chunkBytes: this.options.chunkBytes ?? CHUNK_BYTES }, async (piece) => {
      if (!(await store.extendLease(db, job.id, job.token, new Date(clock.now().getTime() + LEASE_MS)))) throw new LeaseLost();
      await store.insertChunk(db, { exportId: job.id, organizationId, seq: seq++, data: piece });
    });
  }

  private async mailRequester(trx: Parameters<typeof queueNotice>[0], job: store.ExportJob, ready: { size: number; sha256: string; expiresAt: Date }): Promise<void> {
    const { secrets, clock, settings } = this.options;
    const to = await store.userEmail(trx, job.requestedByUserId);
    if (!to) return;
    const organizationName = (await store.organizationName(trx, job.organizationId)) ?? job.organizationId;
    // A security notice: a copy of all of the organization's data now exists, and its holder should know who asked.
    await queueNotice(trx, { secrets, clock, settings }, {
      kind: 'security_notice',
      to,
      title: `The export of ${organizationName} is ready`,
      lines: [
        `The export of ${organizationName} you asked for is ready: ${job.id}, ${ready.size} bytes, SHA-256 ${ready.sha256}.`,
        `Download it with GET /v1/org/exports/${job.id}/download, signed in, until ${ready.expiresAt.toUTCString()}. Its manifest.json lists every file with its SHA-256.`,
      ],
    });
  }
}
