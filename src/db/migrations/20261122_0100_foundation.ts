import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Identity and organizations. Timestamps are `timestamptz(3)`: the application writes them from
 * its clock (millisecond precision), and keyset cursors carry them, so the column must not hold
 * more precision than a cursor can.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE roles (
      key text PRIMARY KEY,
      rank integer NOT NULL,
      description text NOT NULL
    );
    INSERT INTO roles (key, rank, description) VALUES
      ('owner', 30, 'Owns the organization; exactly one per organization.'),
      ('admin', 20, 'Manages the organization and is manager on every resource.'),
      ('member', 10, 'Uses what is granted to them.');

    CREATE TABLE users (
      id text PRIMARY KEY,
      email text NOT NULL,
      email_normalized text NOT NULL,
      name text,
      image text,
      password_hash text NOT NULL,
      is_platform_admin boolean NOT NULL DEFAULT false,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE UNIQUE INDEX users_email_normalized_key ON users (email_normalized);

    CREATE TABLE organizations (
      id text PRIMARY KEY,
      name text NOT NULL,
      plan text NOT NULL CHECK (plan IN ('free', 'team', 'enterprise')),
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX organizations_created_idx ON organizations (created_at DESC, id DESC);

    CREATE TABLE members (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role text NOT NULL REFERENCES roles (key),
      created_at timestamptz(3) NOT NULL,
      removed_at timestamptz(3)
    );
    -- One active membership per user and organization; a removed member may be invited again.
    CREATE UNIQUE INDEX members_active_user_key ON members (organization_id, user_id) WHERE removed_at IS NULL;
    -- Exactly one owner: at most one here, at least one by the services' rules.
    CREATE UNIQUE INDEX members_one_owner_key ON members (organization_id) WHERE role = 'owner' AND removed_at IS NULL;
    CREATE INDEX members_org_page_idx ON members (organization_id, created_at DESC, id DESC);
    CREATE INDEX members_user_idx ON members (user_id);

    CREATE TABLE sessions (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      active_organization_id text REFERENCES organizations (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3) NOT NULL,
      revoked_at timestamptz(3)
    );
    CREATE INDEX sessions_user_idx ON sessions (user_id);

    CREATE TABLE teams (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text NOT NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX teams_org_page_idx ON teams (organization_id, created_at DESC, id DESC);

    CREATE TABLE team_members (
      team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      member_id text NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_at timestamptz(3) NOT NULL,
      PRIMARY KEY (team_id, member_id)
    );
    CREATE INDEX team_members_member_idx ON team_members (member_id);

    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      member_id text NOT NULL REFERENCES members (id) ON DELETE CASCADE,
      name text NOT NULL,
      prefix text NOT NULL,
      key_hash text NOT NULL UNIQUE,
      created_at timestamptz(3) NOT NULL,
      expires_at timestamptz(3),
      last_used_at timestamptz(3),
      revoked_at timestamptz(3)
    );
    CREATE INDEX api_keys_org_page_idx ON api_keys (organization_id, created_at DESC, id DESC);
  `,
  );
}
