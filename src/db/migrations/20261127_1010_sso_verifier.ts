import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Login CSRF (docs/sso.md#signing-in, RFC 9700 §4.7): a sign-in started with `returnTo` is bound to
 * a `verifier` the starting client keeps. The login state stores its SHA-256, the exchange code
 * made from that state carries it on, and the exchange must present the verifier. States and codes
 * of earlier versions have none and cannot be exchanged (they live minutes).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE sso_login_states ADD COLUMN verifier_hash text NULL;
    ALTER TABLE sso_exchange_codes ADD COLUMN verifier_hash text NULL;
  `,
  );
}
