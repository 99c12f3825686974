import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Organization deletion (docs/organization-deletion.md), owned by src/org. An organization whose
 * `deletion_scheduled_at` is set is locked: every credential query reads it (src/principal) and
 * the lifecycle job (src/org/lifecycle-job.ts) mails its members and, from `purge_at`, purges it
 * in batches under a lease; `deletion_notices_after` is the last member mailed, so a crashed
 * run resumes where it stopped. Webhook endpoints are paused by the lock (`organization_locked`)
 * without touching their own `enabled`. The tombstone is what remains once a purge finished.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE organizations
      ADD COLUMN deletion_scheduled_at timestamptz,
      ADD COLUMN purge_at timestamptz,
      ADD COLUMN deletion_requested_by_user_id text,
      ADD COLUMN deletion_notices_after text,
      ADD COLUMN deletion_notices_done_at timestamptz,
      ADD COLUMN purge_started_at timestamptz,
      ADD COLUMN lifecycle_lease_until timestamptz,
      ADD COLUMN lifecycle_lease_token text;
    CREATE INDEX organizations_deletion_due ON organizations (purge_at) WHERE deletion_scheduled_at IS NOT NULL;

    -- The purge clears these pointers in batches (and the organization's delete checks them).
    CREATE INDEX sessions_active_organization_idx ON sessions (active_organization_id) WHERE active_organization_id IS NOT NULL;
    CREATE INDEX users_provisioned_by_organization_idx ON users (provisioned_by_organization_id) WHERE provisioned_by_organization_id IS NOT NULL;

    ALTER TABLE webhook_endpoints ADD COLUMN organization_locked boolean NOT NULL DEFAULT false;

    CREATE TABLE organization_tombstones (
      organization_id text PRIMARY KEY,
      name_sha256 text NOT NULL,
      deleted_at timestamptz NOT NULL,
      deleted_by_user_id text,
      purged_at timestamptz NOT NULL
    );
  `,
  );
}
