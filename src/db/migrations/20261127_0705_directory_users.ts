import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Directory users (docs/scim.md#directory-users-and-linking): a SCIM User is the identity provider's
 * record, kept as given, and linked to a member when it can be. Before, a SCIM User *was* a
 * member (its SCIM state in members.external_id / members.scim_attributes).
 *
 * - directory_users: `user_name` is unique per organization ignoring case; `email` is the chosen
 *   sign-in address (null when none is valid); `member_id` is set while linked, and `link_reason`
 *   says why not otherwise. Pages are startIndex/count in creation order over
 *   (organization_id, created_at, id), so any depth costs an index range, not a sort.
 * - directory_group_members: a SCIM Group's members are directory users; the team holds the linked
 *   ones' members (an unlinked one joins the team when it links).
 * - users.provisioned_by_organization_id: the organization whose SCIM made the account (such an
 *   account, still password-less and in no other organization, follows its directory user's
 *   renames).
 *
 * Existing SCIM data moves: every active member SCIM wrote becomes a linked directory user with
 * the member's id as its id (the identity provider stored that id and keeps using it), its
 * userName the account's e-mail, its attributes and externalId as stored, `active` from the
 * suspension; SCIM Groups' members follow; password-less accounts SCIM made are marked as
 * provisioned by that organization. The members' SCIM columns go.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE directory_users (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_name text NOT NULL,
      user_name_normalized text NOT NULL,
      external_id text,
      active boolean NOT NULL,
      attributes jsonb NOT NULL,
      email text,
      email_normalized text,
      member_id text REFERENCES members (id) ON DELETE SET NULL,
      link_reason text,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL,
      CONSTRAINT directory_users_link_reason_check CHECK (link_reason IN ('no_valid_email', 'email_belongs_to_other_account', 'email_shared_with', 'member_limit')),
      CONSTRAINT directory_users_linked_or_reason_check CHECK ((member_id IS NULL) <> (link_reason IS NULL))
    );
    CREATE UNIQUE INDEX directory_users_org_user_name_key ON directory_users (organization_id, user_name_normalized);
    CREATE UNIQUE INDEX directory_users_member_key ON directory_users (member_id) WHERE member_id IS NOT NULL;
    CREATE INDEX directory_users_org_order_idx ON directory_users (organization_id, created_at, id);
    CREATE INDEX directory_users_org_email_idx ON directory_users (organization_id, email_normalized, created_at) WHERE email_normalized IS NOT NULL;
    CREATE INDEX directory_users_org_external_id_idx ON directory_users (organization_id, external_id) WHERE external_id IS NOT NULL;
    CREATE INDEX directory_users_org_unlinked_idx ON directory_users (organization_id, created_at, id) WHERE member_id IS NULL;

    CREATE TABLE directory_group_members (
      team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      directory_user_id text NOT NULL REFERENCES directory_users (id) ON DELETE CASCADE,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      created_at timestamptz(3) NOT NULL,
      PRIMARY KEY (team_id, directory_user_id)
    );
    CREATE INDEX directory_group_members_user_idx ON directory_group_members (directory_user_id);

    ALTER TABLE users ADD COLUMN provisioned_by_organization_id text REFERENCES organizations (id) ON DELETE SET NULL;

    INSERT INTO directory_users (id, organization_id, user_name, user_name_normalized, external_id, active, attributes, email, email_normalized, member_id, link_reason, created_at, updated_at)
    SELECT m.id, m.organization_id, u.email, lower(u.email), m.external_id, m.suspended_at IS NULL, m.scim_attributes, u.email, u.email_normalized, m.id, NULL,
           m.created_at, coalesce(m.updated_at, m.created_at)
    FROM members m JOIN users u ON u.id = m.user_id
    WHERE m.removed_at IS NULL AND m.scim_attributes IS NOT NULL;

    INSERT INTO directory_group_members (team_id, directory_user_id, organization_id, created_at)
    SELECT tm.team_id, d.id, tm.organization_id, tm.created_at
    FROM team_members tm JOIN directory_users d ON d.member_id = tm.member_id;

    UPDATE users u SET provisioned_by_organization_id = (
      SELECT m.organization_id FROM members m WHERE m.user_id = u.id AND m.scim_attributes IS NOT NULL ORDER BY m.created_at, m.id LIMIT 1
    )
    WHERE u.password_hash IS NULL;

    DROP INDEX IF EXISTS members_org_external_id_idx;
    ALTER TABLE members DROP COLUMN external_id;
    ALTER TABLE members DROP COLUMN scim_attributes;
  `,
  );
}
