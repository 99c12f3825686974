import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Plans as data (docs/workers-and-usage.md#plans-limits-and-usage): each plan's limits (null = unlimited) and features. The
 * organizations' `plan` column keeps its values and now references this table, so a plan that
 * does not exist cannot be set. Changing a plan's limits is an UPDATE here, not a release.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE plans (
      key text PRIMARY KEY,
      rank integer NOT NULL UNIQUE,
      max_members integer CHECK (max_members >= 0),
      max_workers integer CHECK (max_workers >= 0),
      max_llm_providers integer CHECK (max_llm_providers >= 0),
      features jsonb NOT NULL DEFAULT '{}'
    );
    INSERT INTO plans (key, rank, max_members, max_workers, max_llm_providers, features) VALUES
      ('free', 0, 5, 2, 1, '{"analytics": false, "sso": false, "scim": false, "auditLog": false}'),
      ('team', 1, 50, 20, 10, '{"analytics": true, "sso": false, "scim": false, "auditLog": false}'),
      ('enterprise', 2, NULL, NULL, NULL, '{"analytics": true, "sso": true, "scim": true, "auditLog": true}');
    ALTER TABLE organizations ADD CONSTRAINT organizations_plan_fkey FOREIGN KEY (plan) REFERENCES plans (key)
  `,
  );
}
