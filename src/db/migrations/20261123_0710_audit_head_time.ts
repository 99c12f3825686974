import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * (Numbered after 0700 so it sorts after migrations already applied on main.)
 * The chain head also records when its last entry was written, so verification can tell an
 * organization whose entries were all pruned by retention from one whose latest entries were
 * deleted by hand.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE audit_chain_heads ADD COLUMN last_at timestamptz(3);
  `,
  );
}
