import { sql } from 'kysely';
import type { Db } from '../db/schema';
import type { Principal } from '../domain/principal';
import { sha256Hex } from '../lib/crypto';
import { preparedAs } from '../db/connect';
import { membershipOf } from './membership';
import { recordServiceAccountUse } from '../service-accounts/credentials';
import { organizationUnlocked } from './organization-lock';

/** Writing `last_used_at` on every request would turn reads into writes; once a minute is enough. */
const LAST_USED_GRANULARITY_MS = 60_000;

/**
 * An API key → the member it acts as, with that member's current role (and that role's current
 * permissions, narrowed by the key's scope): its creator, or the service account it was made for
 * (no user; docs/service-accounts.md). A removed or suspended member's key is dead, and so is a
 * disabled service account's (until it is enabled again). A person's key in an organization that
 * requires a second factor the person lacks carries `mfaMissing` (src/access/session-gates.ts).
 */
export async function principalFromApiKey(db: Db, key: string, now: Date): Promise<Principal | null> {
  const row = await db
    .selectFrom('api_keys as k')
    .modifyFront(preparedAs('api_key_principal'))
    .innerJoin('members as m', 'm.id', 'k.member_id')
    // A person's membership has a user; a service account's member has none, and its account row.
    .leftJoin('users as u', 'u.id', 'm.user_id')
    .leftJoin('service_accounts as s', 's.member_id', 'm.id')
    .leftJoin('organization_roles as r', (join) => join.onRef('r.organization_id', '=', 'm.organization_id').onRef('r.key', '=', 'm.role'))
    .select([
      'k.id as apiKeyId',
      'k.organization_id as organizationId',
      'k.last_used_at as lastUsedAt',
      'k.permissions as scope',
      'm.id as memberId',
      'u.id as userId',
      's.id as serviceAccountId',
      's.last_used_at as serviceAccountLastUsedAt',
      'm.role as role',
      'r.built_in as roleBuiltIn',
      'r.permissions as rolePermissions',
      'u.is_platform_admin as isPlatformAdmin',
      // A person's key follows the person's standing under the organization's requireMfa
      // (docs/second-factors.md#requiring-it-of-an-organization): refused while they hold no
      // factor. A service account's member has no user and is not asked.
      sql<boolean>`(m.user_id IS NOT NULL
        AND EXISTS (SELECT 1 FROM organization_auth_policies ap WHERE ap.organization_id = m.organization_id AND ap.require_mfa)
        AND NOT EXISTS (SELECT 1 FROM user_totp ut WHERE ut.user_id = m.user_id AND ut.confirmed_at IS NOT NULL)
        AND NOT EXISTS (SELECT 1 FROM passkeys pk WHERE pk.user_id = m.user_id))`.as('mfaMissing'),
    ])
    .where('k.key_hash', '=', sha256Hex(key))
    .where('k.revoked_at', 'is', null)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    // Null for a person's key too (no account row).
    .where('s.disabled_at', 'is', null)
    .where((eb) => eb.or([eb('k.expires_at', 'is', null), eb('k.expires_at', '>', now)]))
    // An organization scheduled for deletion: every key of it answers 401.
    .where(organizationUnlocked('k.organization_id'))
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
  if (row.serviceAccountId) await recordServiceAccountUse(db, row.serviceAccountId, row.serviceAccountLastUsedAt, now);
  return {
    kind: 'apiKey',
    userId: row.userId,
    serviceAccountId: row.serviceAccountId,
    sessionId: null,
    apiKeyId: row.apiKeyId,
    isPlatformAdmin: row.isPlatformAdmin === true,
    activeOrganizationId: row.organizationId,
    authenticatedAt: null,
    authMethod: null,
    mfaMissing: row.mfaMissing === true,
    ssoMissing: false,
    emailUnverified: false,
    ssoConnectionId: null,
    membership: membershipOf({
      organizationId: row.organizationId,
      memberId: row.memberId,
      role: row.role,
      roleBuiltIn: row.roleBuiltIn,
      rolePermissions: row.rolePermissions,
      scope: row.scope,
    }),
  };
}
