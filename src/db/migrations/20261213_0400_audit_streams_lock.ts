import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * An organization locked for deletion (docs/organization-deletion.md#deletion): its audit streams deliver
 * up to and including the deletion's own entry, then stop. `locked_through_seq` holds that chain
 * position while the lock lasts (null otherwise); a restore clears it and the streams go on from
 * their cursor, so nothing is skipped.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(db, `ALTER TABLE audit_streams ADD COLUMN locked_through_seq bigint`);
}
