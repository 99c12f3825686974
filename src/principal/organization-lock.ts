import { sql, type RawBuilder } from 'kysely';

/**
 * The deletion lock (docs/organization-deletion.md#deletion) as a condition of the statement that checks a
 * credential, never a query of its own (test/api/principal-round-trips.test.ts counts them):
 * true while the organization whose id `column` holds is not scheduled for deletion. A session
 * reads the same fact as a column (src/principal/session.ts) to answer 403 instead of 401.
 * `column` is a column reference written in this repository, never input.
 */
export function organizationUnlocked(column: string): RawBuilder<boolean> {
  return sql<boolean>`NOT EXISTS (SELECT 1 FROM organizations lock_o WHERE lock_o.id = ${sql.raw(column)} AND lock_o.deletion_scheduled_at IS NOT NULL)`;
}
