import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * The authorization server (docs/oauth.md), all of it in the service's database so any replica
 * answers any step:
 * - oauth_signing_keys: the keys access tokens are signed with (RS256). The private key is sealed
 *   with SECRET_KEY; `retired_at` is set when a newer key takes over signing, and the key keeps
 *   verifying (it stays in the JWKS) until `verify_until`, when every token it signed has expired.
 * - oauth_records: oidc-provider's storage (its models: grants, refresh tokens, device codes,
 *   interactions, ...) and the revoked access tokens. A row's id is the SHA-256 of model and id,
 *   never the id itself (an opaque token's id is the token); the payload is sealed with
 *   SECRET_KEY. `grant_key`, `uid_key` and `user_code_key` are hashes too, for the library's lookups.
 * - oauth_clients: organization clients (`oac_`), their secret's SHA-256 only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE oauth_signing_keys (
      kid text PRIMARY KEY,
      alg text NOT NULL,
      public_jwk jsonb NOT NULL,
      private_jwk_sealed text NOT NULL,
      created_at timestamptz(3) NOT NULL,
      retired_at timestamptz(3),
      verify_until timestamptz(3)
    );
    -- At most one key signs at a time.
    CREATE UNIQUE INDEX oauth_signing_keys_one_current ON oauth_signing_keys ((true)) WHERE retired_at IS NULL;

    CREATE TABLE oauth_records (
      id text PRIMARY KEY,
      model text NOT NULL,
      payload_sealed text NOT NULL,
      grant_key text,
      uid_key text,
      user_code_key text,
      expires_at timestamptz(3),
      consumed_at timestamptz(3)
    );
    CREATE INDEX oauth_records_grant_idx ON oauth_records (grant_key) WHERE grant_key IS NOT NULL;
    CREATE INDEX oauth_records_uid_idx ON oauth_records (uid_key) WHERE uid_key IS NOT NULL;
    CREATE INDEX oauth_records_user_code_idx ON oauth_records (user_code_key) WHERE user_code_key IS NOT NULL;
    CREATE INDEX oauth_records_expiry_idx ON oauth_records (expires_at) WHERE expires_at IS NOT NULL;

    CREATE TABLE oauth_clients (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      type text NOT NULL CHECK (type IN ('public', 'confidential')),
      redirect_uris text[] NOT NULL,
      scopes text[] NOT NULL,
      logo_url text,
      secret_hash text UNIQUE,
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      CHECK ((type = 'confidential') = (secret_hash IS NOT NULL))
    );
    CREATE INDEX oauth_clients_org_page_idx ON oauth_clients (organization_id, created_at DESC, id DESC);
  `,
  );
}
