import { sql, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { newId } from '../lib/ids';
import { canonicalJson } from './canonical';
import { currentAuditContext, type Actor, type AuditContext } from './context';
import { redactChanges } from './redact';
import { emitEvent } from '../events/outbox';

/** `{field: {from, to}}`; values may nest. Secrets are redacted by recordChange, whatever is passed. */
export type Changes = Record<string, { from?: unknown; to?: unknown } | unknown>;

export interface Change {
  /** '<resource>.<verb>', e.g. 'team.created', 'member.role_changed', 'marketplace.archived'. */
  action: string;
  target: { type: string; id: string | null };
  changes?: Changes;
  /** Defaults to the context's organization; name it when the change is in another one (accepting an invitation, creating an organization). */
  organizationId?: string;
  /** Overrides the actor's member id (the caller's membership in that other organization). */
  actorMemberId?: string | null;
  /** Overrides the actor (a sign-in, where the request had no principal yet). */
  actor?: Actor;
}

/** The entry as the API shows it and as its hash covers it. */
export interface AuditEntry {
  id: string;
  organizationId: string;
  action: string;
  actor: Actor;
  target: { type: string; id: string | null };
  changes: Record<string, unknown>;
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
  createdAt: string;
}

const ACTION = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

/** A benchmark-only switch (AUDIT_BENCH_DISABLE); see README. */
let disabledForBenchmark = false;
export function disableAuditForBenchmark(off: boolean): void {
  disabledForBenchmark = off;
}

/**
 * The canonical JSON the entry's hash covers (also used by verify on the stored columns).
 */
export function entryCanonical(entry: AuditEntry): string {
  return canonicalJson(entry);
}

/**
 * See src/audit/index.ts for how to call it. Writes one entry in `trx` (the change's own
 * transaction) and moves the organization's chain head in the same statement.
 */
export async function recordChange(trx: Transaction<DB>, contextOrChange: AuditContext | Change, maybeChange?: Change): Promise<AuditEntry | null> {
  const change = (maybeChange ?? contextOrChange) as Change;
  const context = maybeChange ? (contextOrChange as AuditContext) : currentAuditContext();
  if (!context) throw new Error(`recordChange(${change.action}) outside a request: pass a context (systemContext()).`);
  if (!context.enabled || disabledForBenchmark) return null;
  if (!ACTION.test(change.action)) throw new Error(`audit action "${change.action}" is not '<resource>.<verb>'`);
  const organizationId = change.organizationId ?? context.organizationId;
  if (!organizationId) throw new Error(`recordChange(${change.action}) has no organization`);
  const entry: AuditEntry = {
    id: newId('auditEntry'),
    organizationId,
    action: change.action,
    actor: change.actor ?? (change.actorMemberId === undefined ? context.actor : { ...context.actor, memberId: change.actorMemberId }),
    target: { type: change.target.type, id: change.target.id ?? null },
    changes: redactChanges((change.changes ?? {}) as Record<string, unknown>),
    requestId: context.requestId,
    ip: context.ip,
    userAgent: context.userAgent,
    createdAt: '',
  };
  const createdAt = context.clock.now();
  entry.createdAt = createdAt.toISOString();
  const canonical = entryCanonical(entry);
  // The same change as an event (audit-and-events.md §2), in the same transaction: the outbox.
  // Written before the entry: the entry takes the organization's chain head (a row lock held
  // until commit, which every audited write of the organization waits for), so taking it last
  // keeps that lock for one statement and the commit instead of three statements.
  await emitEvent(trx, { organizationId, type: entry.action, target: entry.target, changes: entry.changes, createdAt });
  await sql`
    /* prepared:audit_record */
    WITH head AS (
      INSERT INTO audit_chain_heads AS h (organization_id, seq, prev_hash, hash, last_at)
      VALUES (${organizationId}, 1, '', encode(sha256(convert_to(${canonical}::text, 'UTF8')), 'hex'), ${createdAt}::timestamptz)
      ON CONFLICT (organization_id) DO UPDATE
        SET seq = h.seq + 1, prev_hash = h.hash, hash = encode(sha256(convert_to(h.hash || ${canonical}::text, 'UTF8')), 'hex'), last_at = excluded.last_at
      RETURNING seq, prev_hash, hash
    )
    INSERT INTO audit_logs (id, organization_id, seq, action, actor_type, actor_id, actor_member_id, target_type, target_id, changes, request_id, ip, user_agent, created_at, prev_hash, hash)
    SELECT ${entry.id}, ${organizationId}, head.seq, ${entry.action}, ${entry.actor.type}, ${entry.actor.id}, ${entry.actor.memberId},
      ${entry.target.type}, ${entry.target.id}, ${JSON.stringify(entry.changes)}::jsonb, ${entry.requestId}, ${entry.ip}, ${entry.userAgent},
      ${createdAt}::timestamptz, head.prev_hash, head.hash
    FROM head
  `.execute(trx);
  return entry;
}
