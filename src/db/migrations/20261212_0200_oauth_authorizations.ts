import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Members' authorizations of OAuth clients and each organization's policy for outside clients
 * (docs/oauth.md#authorizations), owned by src/authorizations:
 * - oauth_authorizations (`oag_`): member × client × organization × scopes × resource. The client
 *   is an organization client (`oac_`), a metadata-document URL or a dynamically registered
 *   client, so `client_id` is text without a foreign key; its name is the one shown at consent.
 *   `grant_key` is the hash of the authorization server's grant (as oauth_records keys it), so
 *   revoking ends the grant's refresh tokens and codes; its access tokens carry the `oag_` id and
 *   fail on the next request (the token's one principal query reads `revoked_at`).
 * - organization_oauth_policies: which outside clients the organization's members may authorize
 *   and the most scopes those clients' tokens may use. No row: allow, no limit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE oauth_authorizations (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      member_id text NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      client_id text NOT NULL,
      client_type text NOT NULL CHECK (client_type IN ('organization', 'metadata_document', 'dynamic')),
      client_name text NOT NULL,
      scopes text[] NOT NULL,
      resource text NOT NULL,
      grant_key text,
      created_at timestamptz(3) NOT NULL,
      last_used_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3) NOT NULL,
      revoked_at timestamptz(3)
    );
    -- One live authorization per member, client and resource: a new consent extends it.
    CREATE UNIQUE INDEX oauth_authorizations_live_idx ON oauth_authorizations (member_id, client_id, resource) WHERE revoked_at IS NULL;
    CREATE INDEX oauth_authorizations_org_page_idx ON oauth_authorizations (organization_id, created_at DESC, id DESC) WHERE revoked_at IS NULL;
    CREATE INDEX oauth_authorizations_grant_idx ON oauth_authorizations (grant_key) WHERE grant_key IS NOT NULL;

    CREATE TABLE organization_oauth_policies (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      third_party_clients text NOT NULL CHECK (third_party_clients IN ('allow', 'deny', 'allowList')),
      allow_list text[] NOT NULL,
      max_scopes text[],
      updated_at timestamptz(3) NOT NULL
    );
  `,
  );
}
