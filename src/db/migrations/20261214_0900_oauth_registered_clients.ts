import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * Clients registered through dynamic client registration (RFC 7591, docs/oauth.md#dynamic-registration),
 * owned by src/oauth. They belong to no organization: any person may authorize one for an
 * organization whose oauth-policy admits outside clients. `metadata` is the registration as the
 * authorization server validated it (public clients: no secret is ever stored). A client unused
 * for 30 days (`last_used_at`: registration or the last token issued to it) is no longer known.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    CREATE TABLE oauth_registered_clients (
      id text PRIMARY KEY,
      name text,
      metadata jsonb NOT NULL,
      created_at timestamptz(3) NOT NULL,
      last_used_at timestamptz(3) NOT NULL
    );
    CREATE INDEX oauth_registered_clients_page_idx ON oauth_registered_clients (created_at DESC, id DESC);
  `,
  );
}
