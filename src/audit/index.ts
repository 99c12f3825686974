/**
 * The audit log: who changed what, when (docs/audit.md).
 *
 * ONE function writes entries: `recordChange`. Every service function that changes an
 * organization's data calls it inside the transaction of the change, as the last step before
 * commit, once per request:
 *
 *   await deps.db.transaction().execute(async (trx) => {
 *     const team = await store.insertTeam(trx, ...);
 *     await recordChange(trx, deps.audit, { action: 'team.created', target: { type: 'team', id: team.id }, changes: created({ name }) });
 *   });
 *
 * - `trx` must be a Transaction (a plain Kysely handle does not type-check): if the change rolls
 *   back, so does its entry; an entry cannot commit without its change.
 * - The context (actor {type: member | api_key | service_account | scim | worker | system, id,
 *   memberId, apiKeyId when a service account acted through its key, clientId when an OAuth
 *   access token made the change}, requestId,
 *   ip, userAgent, organization, clock) is derived once per request by the router from the
 *   principal (`contextOfRequest` in src/domain/audit-context.ts) and handed to the handler as `deps.audit`; it is
 *   always passed explicitly (no AsyncLocalStorage: see ./context.ts). A helper without `deps`
 *   takes it as a parameter from its caller. Outside a request (a periodic job) pass one:
 *   `recordChange(trx, systemContext(clock, orgId), change)`; a null context throws.
 * - `action` is '<resource>.<verb>' ('member.role_changed', 'marketplace.archived'), `target` the
 *   resource changed, `changes` `{field: {from, to}}` (helpers below). Secret fields (passwords,
 *   keys, tokens, client secrets, webhook secrets) are redacted to '[redacted]' by recordChange
 *   itself (./redact.ts), whatever the caller passes.
 * - `organizationId` defaults to the caller's active organization; name it when the change is in
 *   another one (accepting an invitation, creating an organization), with `actorMemberId`.
 * - Entries of one organization form a hash chain (hash = SHA-256(previous hash ‖ canonical JSON
 *   of the entry)); the organization's row in `audit_chain_heads` is updated in the same statement,
 *   so its row lock orders that organization's writes only. Call recordChange late in the
 *   transaction: the lock is held until commit.
 * - The events outbox (docs/webhooks.md#events) is written from here too, so every audited change is an event.
 * - A change written as ONE statement of its own (no transaction: creating a plugin with its
 *   components, a team without members, an invitation) takes the same entry and event as CTEs of
 *   that statement:
 *   `writeWithAudit(context, change, after, oneStatement, inTransaction)` (record.ts, over
 *   `changeCtes`), with recordChange in a transaction as its fallback.
 */
export { recordChange, writeWithAudit, type Change, type Changes, type AuditEntry, type AuditCtes } from './record';
export { contextOfRequest, systemContext, actorOf, type AuditContext, type Actor, type ActorType } from './context';
export { REDACTED, isSecretField } from './redact';
export { created, deleted, changed } from './changes';
export { streamBatch, entriesAfter, headPosition, positionBefore, type StreamRecord, type StreamBatch, type CheckpointRecord, type EntryReader, type PositionedEntry } from './stream-source';
