import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Service accounts (docs/service-accounts.md): members the organization owns, with no user.
 * - members.type: 'user' (a person; user_id set while the membership is active, as before) or
 *   'service_account' (never a user, never the owner). Ending a service account ends its member
 *   (`removed_at`), as for a person.
 * - service_accounts (src/service-accounts): one per service-account member, with its name,
 *   description, disabled state, creator and last use.
 * - service_account_secrets: its client secrets, only their SHA-256 stored (256-bit random
 *   secrets: nothing to brute-force, and the lookup stays an index hit).
 * - plans.max_service_accounts: free 2, team 20, enterprise unlimited.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE members ADD COLUMN type text NOT NULL DEFAULT 'user' CHECK (type IN ('user', 'service_account'));
    ALTER TABLE members DROP CONSTRAINT members_active_has_user;
    ALTER TABLE members ADD CONSTRAINT members_user_or_service_account CHECK (
      CASE type
        WHEN 'user' THEN user_id IS NOT NULL OR removed_at IS NOT NULL
        ELSE user_id IS NULL AND role <> 'owner'
      END
    );

    CREATE TABLE service_accounts (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      member_id text NOT NULL UNIQUE REFERENCES members (id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      disabled_at timestamptz(3),
      created_by_member_id text NOT NULL REFERENCES members (id),
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      last_used_at timestamptz(3)
    );
    CREATE INDEX service_accounts_org_page_idx ON service_accounts (organization_id, created_at DESC, id DESC);

    CREATE TABLE service_account_secrets (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      service_account_id text NOT NULL REFERENCES service_accounts (id) ON DELETE CASCADE,
      secret_hash text NOT NULL UNIQUE,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3),
      last_used_at timestamptz(3)
    );
    CREATE INDEX service_account_secrets_page_idx ON service_account_secrets (service_account_id, created_at DESC, id DESC);

    ALTER TABLE plans ADD COLUMN max_service_accounts integer CHECK (max_service_accounts >= 0);
    UPDATE plans SET max_service_accounts = CASE key WHEN 'free' THEN 2 WHEN 'team' THEN 20 ELSE NULL END;
  `,
  );
}
