import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * An invitation names its latest message (docs/people-and-roles.md#invitations): its `delivery` is that message's
 * own record in `mail_messages`, read through a join, never copied. A resend points it at the new
 * message. Invitations made before this have none (their `delivery` is null).
 *
 * The invitee's own list (GET /v1/me/invitations) looks pending invitations up by address across
 * organizations.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE invitations ADD COLUMN mail_message_id text REFERENCES mail_messages (id) ON DELETE SET NULL;
    CREATE INDEX invitations_pending_by_email_idx ON invitations (email_normalized, created_at DESC, id DESC) WHERE status = 'pending'
    `,
  );
}
