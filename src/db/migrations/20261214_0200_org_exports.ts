import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Organization exports (docs/organization-exports.md), owned by src/exports. One row per export,
 * worked by the export job under a lease (`lease_until`, `lease_token`) so a process that dies
 * leaves it to the next claim; the partial unique index is the "one at a time per organization"
 * rule (a second request while one is pending or running fails its insert). The zip itself is
 * kept in the database, in chunks of about a megabyte (`organization_export_chunks`), so every
 * replica can serve it and nothing lives on a process's disk; chunks go when the export expires.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE organization_exports (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      requested_by_member_id text NOT NULL,
      requested_by_user_id text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'running', 'ready', 'failed')),
      error text,
      size bigint,
      sha256 text,
      attempts integer NOT NULL DEFAULT 0,
      lease_until timestamptz,
      lease_token text,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz,
      expires_at timestamptz,
      files_erased_at timestamptz
    );
    CREATE UNIQUE INDEX organization_exports_one_active ON organization_exports (organization_id) WHERE status IN ('pending', 'running');
    CREATE INDEX organization_exports_list ON organization_exports (organization_id, created_at DESC, id DESC);
    CREATE INDEX organization_exports_due ON organization_exports (created_at) WHERE status IN ('pending', 'running');
    CREATE INDEX organization_exports_expiring ON organization_exports (expires_at) WHERE files_erased_at IS NULL AND expires_at IS NOT NULL;

    CREATE TABLE organization_export_chunks (
      export_id text NOT NULL REFERENCES organization_exports(id) ON DELETE CASCADE,
      organization_id text NOT NULL,
      seq integer NOT NULL,
      data bytea NOT NULL,
      PRIMARY KEY (export_id, seq)
    );
    CREATE INDEX organization_export_chunks_org ON organization_export_chunks (organization_id);
  `,
  );
}
