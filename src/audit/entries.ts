import type { Selectable } from 'kysely';
import type { AuditLogsTable } from './tables';
import type { ActorType } from './context';
import type { AuditEntry } from './record';

/** The columns an entry is read from (explicit, so hashes stay out of API shapes unless asked). */
export const ENTRY_COLUMNS = [
  'id',
  'organization_id',
  'action',
  'actor_type',
  'actor_id',
  'actor_member_id',
  'actor_api_key_id',
  'actor_client_id',
  'actor_act_sub',
  'target_type',
  'target_id',
  'changes',
  'request_id',
  'ip',
  'user_agent',
  'created_at',
] as const;

export type EntryRow = Pick<Selectable<AuditLogsTable>, (typeof ENTRY_COLUMNS)[number]>;

/** A stored row → the entry (the API shape, and what the hash covers). */
export function toEntry(row: EntryRow): AuditEntry {
  return {
    id: row.id,
    organizationId: row.organization_id,
    action: row.action,
    actor: actorOf(row),
    target: { type: row.target_type, id: row.target_id },
    changes: (typeof row.changes === 'string' ? JSON.parse(row.changes) : row.changes) as Record<string, unknown>,
    requestId: row.request_id,
    ip: row.ip,
    userAgent: row.user_agent,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** The stored actor; `apiKeyId`, `clientId` and `act` only when set, so the entries before them hash as they did. */
function actorOf(row: EntryRow): AuditEntry['actor'] {
  const actor: AuditEntry['actor'] = { type: row.actor_type as ActorType, id: row.actor_id, memberId: row.actor_member_id };
  if (row.actor_api_key_id !== null) actor.apiKeyId = row.actor_api_key_id;
  if (row.actor_client_id !== null) actor.clientId = row.actor_client_id;
  if (row.actor_act_sub !== null) actor.act = { sub: row.actor_act_sub };
  return actor;
}
