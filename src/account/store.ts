import { sql } from 'kysely';
import type { Db } from '../db/schema';

/**
 * Reads of the account area (it writes nothing itself: users and sessions through src/users,
 * memberships through src/members).
 */

/**
 * Whether an identity provider owns the account's address: it has an SSO identity, a SCIM
 * directory user is linked to one of its active memberships, or SCIM made it.
 */
export async function addressManagedByIdentityProvider(db: Db, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('users as u')
    .select(
      sql<boolean>`(u.provisioned_by_organization_id IS NOT NULL
        OR EXISTS (SELECT 1 FROM sso_identities i WHERE i.user_id = u.id)
        OR EXISTS (SELECT 1 FROM directory_users d JOIN members m ON m.id = d.member_id WHERE m.user_id = u.id AND m.removed_at IS NULL))`.as('managed'),
    )
    .where('u.id', '=', userId)
    .executeTakeFirst();
  return row?.managed === true;
}
