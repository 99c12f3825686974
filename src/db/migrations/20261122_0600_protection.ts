import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Rate-limit counters: one row per key (e.g. sign-in failures of one e-mail), a fixed window that
 * restarts when `expires_at` has passed. Kept in Postgres so several service processes share them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE rate_limits (
      key text PRIMARY KEY,
      points integer NOT NULL,
      expires_at timestamptz(3) NOT NULL
    );
    CREATE INDEX rate_limits_expires_idx ON rate_limits (expires_at);
  `,
  );
}
