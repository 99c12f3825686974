import { sql, type Kysely } from 'kysely';
import { execScript } from '../exec-sql';
import { newId } from '../../lib/ids';

/** The built-in roles every organization has (their permissions are decided in src/access). */
const BUILT_IN_ROLE_ROWS = [
  { key: 'owner', name: 'Owner', description: 'Owns the organization; exactly one per organization. Holds every permission.' },
  { key: 'admin', name: 'Admin', description: 'Manages the organization and is manager on every resource.' },
  { key: 'member', name: 'Member', description: 'Uses what is granted to them.' },
] as const;

/**
 * Roles per organization (docs/people-and-roles.md#roles-and-permissions): the three built-in ones and custom roles
 * holding a list of permission keys. Members and invitations keep their `role` key, now pointing
 * at a role of their own organization (a composite foreign key, so another organization's key
 * cannot be assigned). Sessions record when they were authenticated (fresh-session checks), API
 * keys an optional permission scope.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE organization_roles (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      key text NOT NULL,
      name text NOT NULL,
      description text NOT NULL,
      permissions text[] NOT NULL,
      built_in boolean NOT NULL,
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE UNIQUE INDEX organization_roles_key ON organization_roles (organization_id, key);
    CREATE INDEX organization_roles_org_page_idx ON organization_roles (organization_id, created_at DESC, id DESC);
    CREATE INDEX members_org_role_idx ON members (organization_id, role) WHERE removed_at IS NULL;

    ALTER TABLE sessions ADD COLUMN authenticated_at timestamptz(3);
    UPDATE sessions SET authenticated_at = created_at;
    ALTER TABLE sessions ALTER COLUMN authenticated_at SET NOT NULL;

    ALTER TABLE api_keys ADD COLUMN permissions text[]
  `,
  );
  // Built-in rows for the organizations that exist (new ones get theirs when they are created).
  const orgs = await sql<{ id: string; created_at: Date }>`SELECT id, created_at FROM organizations`.execute(db);
  for (const org of orgs.rows) {
    for (const role of BUILT_IN_ROLE_ROWS) {
      await sql`INSERT INTO organization_roles (id, organization_id, key, name, description, permissions, built_in, created_at, updated_at)
        VALUES (${newId('role')}, ${org.id}, ${role.key}, ${role.name}, ${role.description}, '{}', true, ${org.created_at}, ${org.created_at})`.execute(db);
    }
  }
  await execScript(
    db,
    `
    ALTER TABLE members DROP CONSTRAINT members_role_fkey;
    ALTER TABLE members ADD CONSTRAINT members_role_fkey FOREIGN KEY (organization_id, role) REFERENCES organization_roles (organization_id, key);
    ALTER TABLE invitations DROP CONSTRAINT invitations_role_fkey;
    ALTER TABLE invitations ADD CONSTRAINT invitations_role_fkey FOREIGN KEY (organization_id, role) REFERENCES organization_roles (organization_id, key)
  `,
  );
}
