import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Second factors (docs/second-factors.md), owned by src/mfa: a user's TOTP secret (encrypted, with
 * the last accepted time step so a code is accepted once), their recovery codes (HMAC'd, single
 * use), their passkeys (public key and signature counter), the pending WebAuthn challenges and
 * two-step sign-in challenges (token hashed, five tries, five minutes), and each organization's
 * sign-in policy (`requireMfa`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE user_totp (
      user_id text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      secret_sealed text NOT NULL,
      confirmed_at timestamptz NULL,
      last_used_step bigint NULL,
      created_at timestamptz NOT NULL
    );

    CREATE TABLE user_recovery_codes (
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      code_hash text NOT NULL,
      used_at timestamptz NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (user_id, code_hash)
    );

    CREATE TABLE passkeys (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name text NOT NULL,
      credential_id text NOT NULL UNIQUE,
      public_key text NOT NULL,
      counter bigint NOT NULL,
      transports text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL,
      last_used_at timestamptz NULL
    );
    CREATE INDEX passkeys_user ON passkeys (user_id, created_at, id);

    CREATE TABLE webauthn_registrations (
      user_id text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      challenge text NOT NULL,
      expires_at timestamptz NOT NULL
    );

    CREATE TABLE mfa_challenges (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      purpose text NOT NULL CHECK (purpose IN ('sign_in', 'reauthenticate')),
      session_id text NULL REFERENCES sessions (id) ON DELETE CASCADE,
      webauthn_challenge text NULL,
      failures integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz NULL
    );
    CREATE INDEX mfa_challenges_user ON mfa_challenges (user_id);

    CREATE TABLE organization_auth_policies (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      require_mfa boolean NOT NULL,
      updated_at timestamptz NOT NULL
    );
  `,
  );
}
