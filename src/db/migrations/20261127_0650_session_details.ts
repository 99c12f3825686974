import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * What a session records of its sign-in (accounts and second factors build on it):
 * - auth_method gains 'reset' (a password reset signs in) and 'invitation' (an invitation accepted
 *   by a new account signs in);
 * - second_factor: the factor proved at sign-in, if any;
 * - ip, user_agent: where the session was opened from (shown to the user in a sessions list);
 * - last_used_at: when the session was last seen (kept by the accounts area).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(
    db,
    `
    ALTER TABLE sessions DROP CONSTRAINT sessions_auth_method_check;
    ALTER TABLE sessions ADD CONSTRAINT sessions_auth_method_check CHECK (auth_method IN ('password', 'sso', 'reset', 'invitation'));
    ALTER TABLE sessions ADD COLUMN second_factor text NULL CHECK (second_factor IN ('totp', 'passkey', 'recovery_code'));
    ALTER TABLE sessions ADD COLUMN ip text NULL;
    ALTER TABLE sessions ADD COLUMN user_agent text NULL;
    ALTER TABLE sessions ADD COLUMN last_used_at timestamptz NULL;
  `,
  );
}
