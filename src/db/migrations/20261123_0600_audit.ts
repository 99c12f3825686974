import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * The audit log (src/audit/). `audit_logs` is append-only: a trigger refuses UPDATE (retention
 * pruning deletes; nothing edits). `audit_chain_heads` holds one row per organization: the last
 * entry's hash and sequence number. Writing an entry updates that row in the same statement, so
 * its row lock orders the entries of one organization and nothing else: two organizations never
 * wait on each other.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE audit_chain_heads (
      organization_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      prev_hash text NOT NULL,
      hash text NOT NULL
    );

    CREATE TABLE audit_logs (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      action text NOT NULL,
      actor_type text NOT NULL,
      actor_id text,
      actor_member_id text,
      target_type text NOT NULL,
      target_id text,
      changes jsonb NOT NULL,
      request_id text,
      ip text,
      user_agent text,
      created_at timestamptz(3) NOT NULL,
      prev_hash text NOT NULL,
      hash text NOT NULL,
      UNIQUE (organization_id, seq)
    );
    CREATE INDEX audit_logs_org_created_idx ON audit_logs (organization_id, created_at DESC, id DESC);
    CREATE INDEX audit_logs_org_action_idx ON audit_logs (organization_id, action text_pattern_ops, created_at DESC, id DESC);
    CREATE INDEX audit_logs_org_actor_idx ON audit_logs (organization_id, actor_member_id, created_at DESC, id DESC);
    CREATE INDEX audit_logs_org_target_idx ON audit_logs (organization_id, target_id, created_at DESC, id DESC);
    CREATE INDEX audit_logs_created_idx ON audit_logs (created_at);

    CREATE FUNCTION audit_logs_refuse_update() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RAISE EXCEPTION ''audit_logs is append-only''; END';
    CREATE TRIGGER audit_logs_append_only BEFORE UPDATE ON audit_logs FOR EACH ROW EXECUTE FUNCTION audit_logs_refuse_update();
  `,
  );
}
