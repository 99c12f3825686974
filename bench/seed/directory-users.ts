import { sql, type Kysely } from 'kysely';
import type { DB } from '../../src/db/schema';

/**
 * `count` unlinked directory users (SCIM Users) of one organization in one set-based statement,
 * with the attributes an identity provider sends; userNames `user-<label>-<n>@bench.test`, created
 * a millisecond apart so the SCIM page order is the insertion order.
 */
export async function seedDirectoryUsers(db: Kysely<DB>, organizationId: string, count: number, label: string): Promise<void> {
  const start = new Date(Date.now() - count);
  await sql`INSERT INTO directory_users (id, organization_id, user_name, user_name_normalized, external_id, active, attributes, email, email_normalized, member_id, link_reason, created_at, updated_at)
    SELECT 'dus_' || ${label} || lpad(i::text, 22, '0'), ${organizationId}, 'user-' || ${label} || '-' || lpad(i::text, 5, '0') || '@bench.test',
           'user-' || ${label} || '-' || lpad(i::text, 5, '0') || '@bench.test', 'ext-' || i, true,
           jsonb_build_object('name', jsonb_build_object('givenName', 'User', 'familyName', i::text), 'displayName', 'User ' || i,
                              'emails', jsonb_build_array(jsonb_build_object('value', 'user-' || ${label} || '-' || lpad(i::text, 5, '0') || '@bench.test', 'primary', true, 'type', 'work'))),
           NULL, NULL, NULL, 'no_valid_email', ${start}::timestamptz + i * interval '1 millisecond', ${start}::timestamptz + i * interval '1 millisecond'
    FROM generate_series(0, ${count - 1}) AS i`.execute(db);
}
