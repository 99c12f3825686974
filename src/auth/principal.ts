import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import { sha256Hex } from '../lib/crypto';
import { preparedAs } from '../db/connect';
import type { Principal, Role } from '../http/types';

/** Writing `last_used_at` on every request would turn reads into writes; once a minute is enough. */
const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * A session token → who is calling, in one query: the session, its user, and the membership in
 * the session's active organization (absent when the member was removed).
 */
export async function principalFromSession(db: Kysely<DB>, token: string, now: Date): Promise<Principal | null> {
  const row = await db
    .selectFrom('sessions as s')
    .modifyFront(preparedAs('session_principal'))
    .innerJoin('users as u', 'u.id', 's.user_id')
    .leftJoin('members as m', (join) =>
      join.onRef('m.organization_id', '=', 's.active_organization_id').onRef('m.user_id', '=', 's.user_id').on('m.removed_at', 'is', null),
    )
    .select(['s.id as sessionId', 's.user_id as userId', 's.active_organization_id as activeOrganizationId', 'u.is_platform_admin as isPlatformAdmin', 'm.id as memberId', 'm.role as role'])
    .where('s.token_hash', '=', sha256Hex(token))
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .executeTakeFirst();
  return row ? sessionPrincipal(row) : null;
}

/** A session row (with its active membership, if any) → the Principal the handlers see. */
export function sessionPrincipal(row: {
  sessionId: string;
  userId: string;
  activeOrganizationId: string | null;
  isPlatformAdmin: boolean;
  memberId: string | null;
  role: string | null;
}): Principal {
  return {
    kind: 'session',
    userId: row.userId,
    sessionId: row.sessionId,
    apiKeyId: null,
    isPlatformAdmin: row.isPlatformAdmin,
    activeOrganizationId: row.activeOrganizationId,
    membership:
      row.memberId && row.activeOrganizationId
        ? { organizationId: row.activeOrganizationId, memberId: row.memberId, role: row.role as Role }
        : null,
  };
}

/** An API key → its creating member, with that member's current role; a removed member's key is dead. */
export async function principalFromApiKey(db: Kysely<DB>, key: string, now: Date): Promise<Principal | null> {
  const row = await db
    .selectFrom('api_keys as k')
    .modifyFront(preparedAs('api_key_principal'))
    .innerJoin('members as m', 'm.id', 'k.member_id')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['k.id as apiKeyId', 'k.organization_id as organizationId', 'k.last_used_at as lastUsedAt', 'm.id as memberId', 'm.user_id as userId', 'm.role as role', 'u.is_platform_admin as isPlatformAdmin'])
    .where('k.key_hash', '=', sha256Hex(key))
    .where('k.revoked_at', 'is', null)
    .where('m.removed_at', 'is', null)
    .where((eb) => eb.or([eb('k.expires_at', 'is', null), eb('k.expires_at', '>', now)]))
    .executeTakeFirst();
  if (!row) return null;
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_GRANULARITY_MS) {
    await db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', row.apiKeyId)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', new Date(now.getTime() - LAST_USED_GRANULARITY_MS))]))
      .execute();
  }
  return {
    kind: 'apiKey',
    userId: row.userId,
    sessionId: null,
    apiKeyId: row.apiKeyId,
    isPlatformAdmin: row.isPlatformAdmin,
    activeOrganizationId: row.organizationId,
    membership: { organizationId: row.organizationId, memberId: row.memberId, role: row.role as Role },
  };
}
