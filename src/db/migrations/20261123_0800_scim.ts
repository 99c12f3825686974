import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * SCIM provisioning. Tokens are stored as SHA-256 hashes (256 random bits, like API keys).
 * Members gain what a SCIM User carries beyond the user account: a suspension time (`active`),
 * the IdP's `externalId`, the attributes the service does not model (stored as given), and a
 * last-modified time. Users created by SCIM have no password (they sign in through SSO).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE scim_tokens (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      prefix text NOT NULL,
      token_hash text NOT NULL UNIQUE,
      created_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      last_used_at timestamptz(3),
      revoked_at timestamptz(3)
    );
    CREATE INDEX scim_tokens_org_page_idx ON scim_tokens (organization_id, created_at DESC, id DESC) WHERE revoked_at IS NULL;

    ALTER TABLE users ALTER COLUMN password_hash DROP NOT NULL;

    ALTER TABLE members ADD COLUMN suspended_at timestamptz(3);
    ALTER TABLE members ADD COLUMN external_id text;
    ALTER TABLE members ADD COLUMN scim_attributes jsonb;
    ALTER TABLE members ADD COLUMN updated_at timestamptz(3);
    -- SCIM pages are startIndex/count over active members in creation order: an index-only scan
    -- of this partial index skips to any depth without touching removed members or the heap.
    CREATE INDEX members_org_active_order_idx ON members (organization_id, created_at, id) WHERE removed_at IS NULL;
    CREATE INDEX members_org_external_id_idx ON members (organization_id, external_id) WHERE removed_at IS NULL AND external_id IS NOT NULL;

    ALTER TABLE teams ADD COLUMN external_id text;
    CREATE INDEX teams_org_order_idx ON teams (organization_id, created_at, id);
  `,
  );
}
