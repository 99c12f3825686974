import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * A deleted account (DELETE /v1/me, docs/accounts.md#the-callers-own-account) takes its user row, sessions, second
 * factors and SSO links with it, but not the organizations' records of its memberships: those
 * were ended first (`removed_at`) and stay, so what names the member (audit entries, created-by
 * columns, workers, telemetry) keeps pointing at a row. Their `user_id` becomes null on deletion;
 * an active member always has a user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE members ALTER COLUMN user_id DROP NOT NULL;
    ALTER TABLE members DROP CONSTRAINT members_user_id_fkey;
    ALTER TABLE members ADD CONSTRAINT members_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE SET NULL;
    ALTER TABLE members ADD CONSTRAINT members_active_has_user CHECK (user_id IS NOT NULL OR removed_at IS NOT NULL);
  `,
  );
}
