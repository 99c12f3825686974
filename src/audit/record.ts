import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { newId } from '../lib/ids';
import { preparedAs } from '../db/connect';
import { canonicalJson } from './canonical';
import type { Actor, AuditContext } from './context';
import { redactChanges } from './redact';
import { eventRowCte, type EventInput } from '../events/outbox';
import { eventHook, type AuditedEvent } from './event-hook';
import { metrics } from '../observability/metrics';

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

/**
 * The canonical JSON the entry's hash covers (also used by verify on the stored columns).
 */
export function entryCanonical(entry: AuditEntry): string {
  return canonicalJson(entry);
}

/** An entry made from a change and the request's context, not yet written. */
interface PreparedEntry {
  entry: AuditEntry;
  organizationId: string;
  createdAt: Date;
  canonical: string;
  /** False only under the benchmark switch AUDIT_BENCH_DISABLE=on: the event is written, the entry is not. */
  written: boolean;
}

/**
 * The entry `recordChange` writes, checked and redacted; null when neither it nor its event is
 * written (AUDIT_BENCH_DISABLE=entries-and-events).
 */
function prepareEntry(context: AuditContext | null, change: Change): PreparedEntry | null {
  if (!context) throw new Error(`recordChange(${change.action}) outside a request: pass a context (systemContext()).`);
  if (context.benchSkip === 'entries-and-events') return null;
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
  const written = context.benchSkip === 'off';
  // The hash's input is the entry's work: a benchmark baseline without the entry does not pay for it.
  return { entry, organizationId, createdAt, canonical: written ? entryCanonical(entry) : '', written };
}

/**
 * The event's row (`event_row`) and what the event hook queues for it (`event_queued`,
 * `event_announced`, e.g. webhook deliveries): CTEs of the audit entry's statement.
 */
function eventCtes(input: EventInput, overflow: 'queue-the-rest' | 'fail'): { event: AuditedEvent; ctes: RawBuilder<unknown> } {
  const { id, cte, filters } = eventRowCte(input);
  const event = { id, organizationId: input.organizationId, type: input.type, createdAt: input.createdAt, filters };
  return { event, ctes: sql`${cte}, ${eventHook().ctes(event, overflow)}` };
}

/**
 * The event's CTEs (`event`), then the chain head moved and the entry: `audit_head`, `audit_entry`.
 * The head's upsert reads `event_queued` (and `after`, a CTE of the change with a RETURNING clause,
 * when there is one), so it runs once they have: the head's row lock, which orders the
 * organization's audited writes and is held until commit, is taken by the statement's last step.
 */
function auditCtes(p: PreparedEntry, event: RawBuilder<unknown>, after: string | null) {
  const { entry } = p;
  // Benchmark only: the event without the entry. Nothing reads `event_announced` then, so no NOTIFY
  // is sent at commit and dispatchers find the deliveries by polling (scenario 8 has no endpoints).
  if (!p.written) return event;
  const changeWritten = after ? sql`(SELECT count(*) FROM ${sql.table(after)}) AS change_written, ` : sql``;
  return sql`${event}, audit_head AS (
      INSERT INTO audit_chain_heads AS h (organization_id, seq, prev_hash, hash, last_at)
      SELECT ${p.organizationId}, 1, '', encode(sha256(convert_to(${p.canonical}::text, 'UTF8')), 'hex'), ${p.createdAt}::timestamptz
      FROM ${changeWritten}(SELECT count(*) FROM event_queued) AS event_written
      ON CONFLICT (organization_id) DO UPDATE
        SET seq = h.seq + 1, prev_hash = h.hash, hash = encode(sha256(convert_to(h.hash || ${p.canonical}::text, 'UTF8')), 'hex'), last_at = excluded.last_at
      RETURNING seq, prev_hash, hash
    ), audit_entry AS (
      INSERT INTO audit_logs (id, organization_id, seq, action, actor_type, actor_id, actor_member_id, actor_api_key_id, actor_client_id, actor_act_sub, target_type, target_id, changes, request_id, ip, user_agent, created_at, prev_hash, hash)
      SELECT ${entry.id}, ${p.organizationId}, audit_head.seq, ${entry.action}, ${entry.actor.type}, ${entry.actor.id}, ${entry.actor.memberId}, ${entry.actor.apiKeyId ?? null}, ${entry.actor.clientId ?? null}, ${entry.actor.act?.sub ?? null},
        ${entry.target.type}, ${entry.target.id}, ${JSON.stringify(entry.changes)}::jsonb, ${entry.requestId}, ${entry.ip}, ${entry.userAgent},
        ${p.createdAt}::timestamptz, audit_head.prev_hash, audit_head.hash
      FROM audit_head LEFT JOIN event_announced ON true
    )`;
}

/**
 * See src/audit/index.ts for how to call it. Writes one entry in `trx` (the change's own
 * transaction), with the same change as an event (docs/webhooks.md#events: the outbox) and the
 * organization's chain head moved, in one statement (one round trip per audited write). Only an
 * organization with more matching webhook endpoints than the statement carries delivery ids for
 * needs a second statement (`queueRest`), which then runs while the chain head is already held.
 */
export async function recordChange(trx: Transaction<DB>, context: AuditContext | null, change: Change): Promise<AuditEntry | null> {
  const prepared = prepareEntry(context, change);
  if (!prepared) return null;
  const { entry, organizationId, createdAt } = prepared;
  const hook = eventHook();
  const { event, ctes } = eventCtes({ organizationId, type: entry.action, target: entry.target, changes: entry.changes, createdAt }, 'queue-the-rest');
  const startedAt = metrics ? performance.now() : 0;
  const { rows } = await sql<{ id: string; queued: boolean }>`${preparedAs(prepared.written ? 'audit_record' : 'audit_record_event_only')}
    WITH ${auditCtes(prepared, ctes, null)}
    ${hook.matched}
  `.execute(trx);
  metrics?.auditChainWait.observe((performance.now() - startedAt) / 1000);
  // Only an organization with more matching endpoints than the statement carries ids for needs a second statement.
  if (rows.some((row) => !row.queued)) await hook.queueRest(trx, event, rows);
  return prepared.written ? entry : null;
}

/**
 * What a one-statement change adds to its statement: the CTEs, and the suffix of its prepared
 * statement's name (`<name>${suffix}`): the text differs under the benchmark switch, and one
 * name must keep one text (src/db/named-statements.ts).
 */
export interface AuditCtes {
  ctes: RawBuilder<unknown>;
  suffix: string;
}

/**
 * A change written in ONE statement of its own (no transaction: one round trip, atomic by itself)
 * carries its audit entry and event as CTEs of that statement: `WITH <the change's CTEs>,
 * ${ctes} SELECT ...`. The CTEs are the same rows recordChange writes: the event and its
 * deliveries (`eventCtes`), then the chain head and the entry. `after` names a CTE of the change
 * with a RETURNING clause: the chain head is moved only once it has run, so the head's row lock
 * (which orders the organization's audited writes) is held for the entry and the commit, not for
 * the whole change. Null under AUDIT_BENCH_DISABLE=entries-and-events: write the change without them.
 *
 * When the organization has more matching webhook endpoints than the statement carries delivery
 * ids for, the statement fails and writes nothing (`overflowed(err)` is then true): write the
 * change in a transaction with recordChange instead.
 */
export function changeCtes(context: AuditContext | null, change: Change, after: string): { audit: AuditCtes; entry: AuditEntry; overflowed(err: unknown): boolean } | null {
  const prepared = prepareEntry(context, change);
  if (!prepared) return null;
  const { entry, organizationId, createdAt } = prepared;
  const { ctes } = eventCtes({ organizationId, type: entry.action, target: entry.target, changes: entry.changes, createdAt }, 'fail');
  const hook = eventHook();
  const suffix = prepared.written ? '_audited' : '_event_only';
  return { audit: { ctes: auditCtes(prepared, ctes, after), suffix }, entry, overflowed: (err) => hook.isOverflow(err) };
}

/**
 * The one way to write a change as ONE statement with its audit entry and event: `oneStatement`
 * writes the change, with the entry's and event's CTEs (none when auditing is off). When the
 * organization has more matching webhook endpoints than that statement carries delivery ids for,
 * it fails and writes nothing, and `inTransaction` writes the change instead, calling
 * recordChange in its transaction.
 */
export async function writeWithAudit<T>(
  context: AuditContext | null,
  change: Change,
  after: string,
  oneStatement: (audit: AuditCtes | undefined) => Promise<T>,
  inTransaction: () => Promise<T>,
): Promise<T> {
  const audited = changeCtes(context, change, after);
  try {
    return await oneStatement(audited?.audit);
  } catch (err) {
    if (!audited?.overflowed(err)) throw err;
  }
  return inTransaction();
}
