import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Proven addresses and the links that prove them (docs/accounts.md), owned by src/users:
 * - users.email_verified_at: when the address was proven (a verification link, a reset link, an
 *   invitation accepted by token, an identity provider in a verified domain; the bootstrap user).
 *   Accounts without a password were made by SSO or SCIM in a verified domain, so they start
 *   verified; accounts with one prove their address through POST /v1/auth/verify-email/resend.
 * - account_tokens: purpose-bound single-use link tokens, only their SHA-256 stored. An e-mail
 *   change token carries the address it confirms.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE users ADD COLUMN email_verified_at timestamptz NULL;
    UPDATE users SET email_verified_at = created_at WHERE password_hash IS NULL;

    CREATE TABLE account_tokens (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      purpose text NOT NULL CHECK (purpose IN ('verify_email', 'password_reset', 'email_change')),
      token_hash text NOT NULL UNIQUE,
      new_email text NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz NULL,
      CHECK ((purpose = 'email_change') = (new_email IS NOT NULL))
    );
    CREATE INDEX account_tokens_pending ON account_tokens (user_id, purpose) WHERE used_at IS NULL;
  `,
  );
}
