import type { Kysely } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import { newId } from '../lib/ids';
import { toEntry } from './entries';
import { BATCH } from './chain';
import { checkpointOrigin, signCheckpoint } from './checkpoint-note';
import { checkpointsBetween, insertCheckpoints } from './checkpoint-store';
import { auditKey } from './signing-key';
import { chainBatch, chainHead } from './store';

/**
 * The audit log as an organization's export carries it (docs/organization-exports.md#the-audit-log):
 * oldest first, each line the entry as the API shows it plus `chain: {seq, prevHash, hash}`, so
 * anyone can recompute hash = SHA-256(prevHash ‖ canonical JSON of the entry without `chain`) and
 * compare the hash at a checkpoint's count with the checkpoint's head. Read in batches of
 * BATCH rows up to the head as it was when the export began (`throughSeq`), so the file ends where
 * the checkpoints can vouch for it and memory stays flat.
 */
export interface ArchiveDeps {
  db: Kysely<DB>;
  secrets: SecretBox;
  clock: Clock;
  publicBaseUrl: string;
}

/**
 * Signs a checkpoint at the organization's chain head now (as the checkpoint job would at its next
 * pass; the same note when it already did), so an export's log ends at a signed position whatever
 * AUDIT_CHECKPOINT_EVERY and AUDIT_CHECKPOINT_INTERVAL are. Returns the head's position ('0': no
 * entry yet, nothing to sign).
 */
export async function checkpointHeadNow(deps: ArchiveDeps, organizationId: string): Promise<string> {
  const head = await chainHead(deps.db, organizationId);
  if (!head || BigInt(head.seq) === 0n) return '0';
  const hash = head.hash;
  const key = await auditKey(deps);
  const note = signCheckpoint(key, { origin: checkpointOrigin(deps.publicBaseUrl, organizationId), count: BigInt(head.seq), headHex: hash });
  await insertCheckpoints(deps.db, [{ id: newId('auditCheckpoint'), organizationId, seq: head.seq, head: hash, note, createdAt: deps.clock.now() }]);
  return head.seq;
}

export async function* auditLogLines(db: Db, organizationId: string, throughSeq: string): AsyncGenerator<string> {
  let after = '0';
  for (;;) {
    const batch = (await chainBatch(db, organizationId, after, BATCH)).filter((row) => BigInt(row.seq) <= BigInt(throughSeq));
    let chunk = '';
    for (const row of batch) chunk += `${JSON.stringify({ ...toEntry(row), chain: { seq: Number(row.seq), prevHash: row.prev_hash, hash: row.hash } })}\n`;
    if (chunk) yield chunk;
    if (batch.length < BATCH) return;
    after = batch[batch.length - 1]!.seq;
  }
}

/** The signed checkpoints up to `throughSeq`, oldest first, as GET /v1/audit-logs/checkpoints shows them. */
export async function* auditCheckpointLines(db: Db, organizationId: string, throughSeq: string): AsyncGenerator<string> {
  let after = '0';
  for (;;) {
    const batch = await checkpointsBetween(db, organizationId, after, throughSeq, BATCH);
    let chunk = '';
    for (const row of batch) {
      chunk += `${JSON.stringify({ id: row.id, count: Number(row.seq), head: Buffer.from(row.head, 'hex').toString('base64'), note: row.note, createdAt: new Date(row.created_at).toISOString() })}\n`;
    }
    if (chunk) yield chunk;
    if (batch.length < BATCH) return;
    after = batch[batch.length - 1]!.seq;
  }
}
