import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * audit_logs.actor_api_key_id: the API key a service account acted through (docs/audit.md#the-actor).
 * Null for every other entry, which then hashes as before (the actor object carries `apiKeyId`
 * only when it is set).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(db, `ALTER TABLE audit_logs ADD COLUMN actor_api_key_id text;`);
}
