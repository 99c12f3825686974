import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Signed checkpoints of the audit log (docs/audit.md, "Checkpoints"), owned by src/audit:
 * - audit_signing_keys: the service's Ed25519 audit key, one row made by the first process that
 *   needs it (every replica then reads the same row); the private key sealed with SECRET_KEY.
 * - audit_checkpoints: each signed note with its position (`seq`, the entry count) and the chain
 *   head it signs. They are never pruned with the entries, so an old checkpoint stays checkable.
 * - audit_chain_heads.checkpoint_seq / checkpoint_at: the position and time of the organization's
 *   latest checkpoint, so finding the organizations due for one reads the heads alone. Audited
 *   writes never touch these columns.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE audit_signing_keys (
      id text PRIMARY KEY,
      public_key text NOT NULL,
      private_key_sealed text NOT NULL,
      created_at timestamptz(3) NOT NULL
    );

    CREATE TABLE audit_checkpoints (
      id text PRIMARY KEY,
      organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      head text NOT NULL,
      note text NOT NULL,
      created_at timestamptz(3) NOT NULL,
      UNIQUE (organization_id, seq)
    );
    CREATE INDEX audit_checkpoints_org_created_idx ON audit_checkpoints (organization_id, created_at DESC, id DESC);

    ALTER TABLE audit_chain_heads ADD COLUMN checkpoint_seq bigint NOT NULL DEFAULT 0;
    ALTER TABLE audit_chain_heads ADD COLUMN checkpoint_at timestamptz(3);
  `,
  );
}
