import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * A worker is a confidential OAuth client (docs/workers-and-usage.md#workers-as-oauth-clients):
 * `ceiling` is the most its own tokens may do (permission keys its creator or an admin set), read
 * with its creator's permissions on every request. Empty until set: a worker's token does nothing
 * until someone gives it a ceiling.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(db, `ALTER TABLE workers ADD COLUMN ceiling text[] NOT NULL DEFAULT '{}'`);
}
