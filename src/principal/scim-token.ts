import type { Db } from '../db/schema';
import { sha256Hex } from '../lib/crypto';
import type { ScimPrincipal } from '../domain/principal';
import { organizationUnlocked } from './organization-lock';

/** Writing `last_used_at` on every request would turn reads into writes; once a minute is enough. */
const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * A SCIM bearer token → the principal of the /scim/v2 routes: it acts for its organization, with
 * no user or membership. Revoked tokens are dead at once (the lookup filters them).
 */
export async function principalFromScimToken(db: Db, token: string, now: Date): Promise<ScimPrincipal | null> {
  const row = await db
    .selectFrom('scim_tokens')
    .select(['id', 'organization_id as organizationId', 'last_used_at as lastUsedAt', 'created_by_member_id as createdByMemberId'])
    .where('token_hash', '=', sha256Hex(token))
    .where('revoked_at', 'is', null)
    .where(organizationUnlocked('scim_tokens.organization_id'))
    .executeTakeFirst();
  if (!row) return null;
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_GRANULARITY_MS) {
    await db
      .updateTable('scim_tokens')
      .set({ last_used_at: now })
      .where('id', '=', row.id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', new Date(now.getTime() - LAST_USED_GRANULARITY_MS))]))
      .execute();
  }
  return { kind: 'scim', scimTokenId: row.id, organizationId: row.organizationId, createdByMemberId: row.createdByMemberId };
}
