import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * audit_logs.actor_client_id: the OAuth client of the access token a change was made with
 * (docs/audit.md#the-actor). Null for every other entry, which then hashes as before (the actor
 * object carries `clientId` only when it is set).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(db, `ALTER TABLE audit_logs ADD COLUMN actor_client_id text;`);
}
