import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { positioned, type PageRequest } from '../lib/pagination';
import { Invalid } from '../lib/errors';
import { checkpointOrigin, NoteRefused, openCheckpoint } from './checkpoint-note';
import { checkpointAt, listCheckpoints, type CheckpointRow } from './checkpoint-store';
import { replayChain } from './chain';
import { tailMissing } from './service';
import { auditKey as loadAuditKey, type AuditKey } from './signing-key';

/** The audit key of this deployment (made on first use when the process did not make it at start). */
export function auditKeyOf(deps: AppDeps): Promise<AuditKey> {
  return loadAuditKey({ db: deps.db, secrets: deps.secrets, clock: deps.clock, publicBaseUrl: deps.settings.publicBaseUrl });
}

/** GET /.well-known/audit-key: the verifier string. */
export async function auditKeyVerifier(deps: AppDeps): Promise<string> {
  return (await auditKeyOf(deps)).verifier;
}

function toCheckpoint(row: CheckpointRow) {
  return { id: row.id, count: Number(row.seq), head: Buffer.from(row.head, 'hex').toString('base64'), note: row.note, createdAt: row.created_at.toISOString() };
}

export async function listAuditCheckpoints(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'audit-checkpoints',
    page,
    async (after, take) => positioned(await listCheckpoints(deps.db, membership.organizationId, after, take)),
    (row) => toCheckpoint(row),
  );
}

/**
 * POST /v1/audit-logs/verify: the chain check of GET /v1/audit-logs/verify, and whether the log
 * still holds the checkpoint: its entry `count`, reached by replaying the chain, must carry the
 * checkpoint's head. A log cut back (the entry is gone, or a later write took its position) or
 * rewritten before it (a recomputed chain reaches another hash there; an unrecomputed one breaks
 * at or before it) is not consistent. When retention pruned that entry, the checkpoint kept with
 * its hash answers for it, and the kept chain must verify.
 */
export async function verifyAuditCheckpoint(deps: AppDeps, membership: Membership, note: string) {
  const { organizationId } = membership;
  const key = await auditKeyOf(deps);
  let body;
  try {
    body = openCheckpoint(key, note);
  } catch (err) {
    if (err instanceof NoteRefused) throw Invalid.at(['body', 'checkpoint'], err.message);
    throw err;
  }
  if (body.origin !== checkpointOrigin(deps.settings.publicBaseUrl, organizationId)) {
    throw Invalid.at(['body', 'checkpoint'], "is a checkpoint of another organization's log");
  }
  let found: { stored: string; recomputed: string } | null = null;
  const replay = await replayChain(deps.db, organizationId, (row, recomputed) => {
    if (BigInt(row.seq) === body.count) found = { stored: row.hash, recomputed };
  });
  const ok = replay.firstBrokenId === null && !(await tailMissing(deps, organizationId, replay));
  const brokenBefore = replay.firstBrokenSeq !== null && replay.firstBrokenSeq <= body.count;
  let consistent: boolean;
  if (found !== null) {
    const at = found as { stored: string; recomputed: string };
    consistent = !brokenBefore && at.stored === body.headHex && at.recomputed === body.headHex;
  } else if (replay.firstSeq !== null ? body.count < replay.firstSeq : replay.checked === 0 && ok) {
    // Pruned by retention: the checkpoint kept at that position vouches for it.
    const kept = await checkpointAt(deps.db, organizationId, body.count);
    consistent = kept?.head === body.headHex && replay.firstBrokenId === null;
  } else {
    consistent = false;
  }
  return { ok, checked: replay.checked, firstBrokenId: replay.firstBrokenId, checkpoint: { count: Number(body.count), consistent } };
}
