import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Audit log streams (docs/audit.md, "Streams"), owned by src/audit-streams. One row per stream:
 * its sink's settings (`config`, never a secret) and its secrets sealed with SECRET_KEY
 * (`secrets_sealed`), its cursor (`cursor_seq`: the chain position of the last entry the sink
 * accepted; `checkpoint_seq`: the position of the last checkpoint it accepted), and its delivery
 * state. The row is the job: the job runner leases it (`lease_token`, `lease_until`), so one batch
 * per stream is in flight at once across every process, which keeps a stream in order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE audit_streams (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      type text NOT NULL,
      config jsonb NOT NULL,
      secrets_sealed text NOT NULL,
      enabled boolean NOT NULL DEFAULT true,
      cursor_seq bigint NOT NULL,
      cursor_id text,
      checkpoint_seq bigint NOT NULL,
      last_delivered_at timestamptz(3),
      last_error text,
      failing_since timestamptz(3),
      failures integer NOT NULL DEFAULT 0,
      paused_at timestamptz(3),
      next_attempt_at timestamptz(3) NOT NULL,
      lease_token text,
      lease_until timestamptz(3),
      created_at timestamptz(3) NOT NULL,
      updated_at timestamptz(3) NOT NULL
    );
    CREATE INDEX audit_streams_org_created_idx ON audit_streams (organization_id, created_at DESC, id DESC);
    CREATE INDEX audit_streams_due_idx ON audit_streams (next_attempt_at) WHERE enabled AND paused_at IS NULL;
  `,
  );
}
