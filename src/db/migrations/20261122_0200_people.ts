import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * People: invitations (tokens stored as SHA-256 hashes), plus the indexes members, teams and API
 * keys need beyond the foundation's. "Expired" is not a stored status: a pending invitation past
 * `expires_at` is expired (analytics counts pending as status = 'pending' AND expires_at > now).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE invitations (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      email text NOT NULL,
      email_normalized text NOT NULL,
      role text NOT NULL REFERENCES roles (key),
      token_hash text NOT NULL UNIQUE,
      status text NOT NULL CHECK (status IN ('pending', 'accepted', 'cancelled')),
      invited_by_member_id text REFERENCES members (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3) NOT NULL,
      accepted_at timestamptz(3),
      cancelled_at timestamptz(3)
    );
    -- One pending invitation per e-mail and organization (an expired one is cancelled before a new one).
    CREATE UNIQUE INDEX invitations_pending_email_key ON invitations (organization_id, email_normalized) WHERE status = 'pending';
    CREATE INDEX invitations_org_page_idx ON invitations (organization_id, created_at DESC, id DESC);

    -- Team names are unique in an organization, ignoring case.
    CREATE UNIQUE INDEX teams_org_name_key ON teams (organization_id, lower(name));

    -- Removing a member revokes their keys.
    CREATE INDEX api_keys_member_idx ON api_keys (member_id) WHERE revoked_at IS NULL;
  `,
  );
}
