import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Delegations from a member to a worker (docs/workers-and-usage.md#delegations-and-token-exchange):
 * - oauth_authorizations gains the client type `worker` (a delegation is the member's
 *   authorization of the worker) and `subject_token_hash`, the SHA-256 of the subject token the
 *   delegation answered once (the token exchange finds the delegation by it);
 * - audit_logs.actor_act_sub: the actor of a token exchanged for a member (RFC 8693 `act.sub`, the
 *   worker), null for every other entry, which then hashes as before (the actor carries `act` only
 *   when it is set).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE oauth_authorizations DROP CONSTRAINT oauth_authorizations_client_type_check;
    ALTER TABLE oauth_authorizations ADD CONSTRAINT oauth_authorizations_client_type_check CHECK (client_type IN ('organization', 'metadata_document', 'dynamic', 'worker'));
    ALTER TABLE oauth_authorizations ADD COLUMN subject_token_hash text;
    ALTER TABLE audit_logs ADD COLUMN actor_act_sub text;
  `,
  );
}
