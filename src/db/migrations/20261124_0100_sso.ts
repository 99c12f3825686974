import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Single sign-on (docs/sso.md): every table and column the SSO area needs, in one
 * migration. Secrets: the OIDC client secret and the PKCE verifier are SecretBox ciphertext
 * (`*_sealed`); login states and exchange codes are stored only as SHA-256 hashes.
 * - sso_connections: an organization's OIDC or SAML identity provider (config per type).
 * - sso_domains: e-mail domains an organization claims; verified by a DNS TXT challenge. A domain
 *   is verified by at most one organization (partial unique index).
 * - sso_identities: (connection, subject) → user; never matched by e-mail alone.
 * - sso_login_states: a started sign-in (OIDC state/PKCE/nonce or SAML request id, returnTo).
 * - sso_exchange_codes: one-time codes handed to `returnTo` (60 s, consumed once).
 * - sso_saml_assertions: assertion ids already accepted (replay), kept until they expire.
 * - organizations.sso_enforced, sessions.auth_method / sso_connection_id (an SSO session).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE sso_connections (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      type text NOT NULL CHECK (type IN ('oidc', 'saml')),
      name text NOT NULL,
      oidc_issuer text,
      oidc_client_id text,
      oidc_client_secret_sealed text,
      oidc_scopes text[],
      saml_idp_entity_id text,
      saml_idp_sso_url text,
      saml_idp_certificate text,
      default_role text NOT NULL DEFAULT 'member',
      role_mappings jsonb NOT NULL DEFAULT '[]',
      enabled boolean NOT NULL DEFAULT true,
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      CHECK (type <> 'oidc' OR (oidc_issuer IS NOT NULL AND oidc_client_id IS NOT NULL AND oidc_client_secret_sealed IS NOT NULL AND oidc_scopes IS NOT NULL)),
      CHECK (type <> 'saml' OR (saml_idp_entity_id IS NOT NULL AND saml_idp_sso_url IS NOT NULL AND saml_idp_certificate IS NOT NULL))
    );
    CREATE INDEX sso_connections_org_page_idx ON sso_connections (organization_id, created_at DESC, id DESC);
    -- Sign-in by e-mail picks the organization's oldest enabled connection.
    CREATE INDEX sso_connections_org_enabled_idx ON sso_connections (organization_id, created_at, id) WHERE enabled;

    CREATE TABLE sso_domains (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      domain text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'verified')),
      challenge_value text NOT NULL,
      created_at timestamptz(3) NOT NULL,
      verified_at timestamptz(3),
      CHECK ((status = 'verified') = (verified_at IS NOT NULL))
    );
    CREATE UNIQUE INDEX sso_domains_org_domain_key ON sso_domains (organization_id, domain);
    CREATE UNIQUE INDEX sso_domains_verified_key ON sso_domains (domain) WHERE status = 'verified';
    CREATE INDEX sso_domains_org_page_idx ON sso_domains (organization_id, created_at DESC, id DESC);

    CREATE TABLE sso_identities (
      connection_id text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
      subject text NOT NULL,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      email text,
      created_at timestamptz(3) NOT NULL,
      last_sign_in_at timestamptz(3) NOT NULL,
      PRIMARY KEY (connection_id, subject)
    );
    CREATE INDEX sso_identities_user_idx ON sso_identities (user_id);

    CREATE TABLE sso_login_states (
      state_hash text PRIMARY KEY,
      connection_id text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      code_verifier_sealed text,
      nonce text,
      saml_request_id text,
      return_to text,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3) NOT NULL,
      consumed_at timestamptz(3)
    );
    CREATE UNIQUE INDEX sso_login_states_saml_request_key ON sso_login_states (saml_request_id) WHERE saml_request_id IS NOT NULL;
    CREATE INDEX sso_login_states_expires_idx ON sso_login_states (expires_at);

    CREATE TABLE sso_exchange_codes (
      code_hash text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      connection_id text REFERENCES sso_connections (id) ON DELETE CASCADE,
      session_id text REFERENCES sessions (id) ON DELETE CASCADE,
      session_token_sealed text,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3) NOT NULL,
      consumed_at timestamptz(3)
    );
    CREATE INDEX sso_exchange_codes_expires_idx ON sso_exchange_codes (expires_at);

    CREATE TABLE sso_saml_assertions (
      connection_id text NOT NULL REFERENCES sso_connections (id) ON DELETE CASCADE,
      assertion_id text NOT NULL,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3) NOT NULL,
      PRIMARY KEY (connection_id, assertion_id)
    );
    CREATE INDEX sso_saml_assertions_expires_idx ON sso_saml_assertions (expires_at);

    ALTER TABLE organizations ADD COLUMN sso_enforced boolean NOT NULL DEFAULT false;

    ALTER TABLE sessions ADD COLUMN auth_method text NOT NULL DEFAULT 'password' CHECK (auth_method IN ('password', 'sso'));
    ALTER TABLE sessions ADD COLUMN sso_connection_id text REFERENCES sso_connections (id) ON DELETE SET NULL;
  `,
  );
}
