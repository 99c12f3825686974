import type { Kysely } from 'kysely';
import { execScript } from '../exec-sql';

/**
 * The device flow's polling (docs/oauth.md#device-flow): a device code's row in oauth_records keeps
 * when the device last polled and the interval it must keep, so a device polling faster is answered
 * `slow_down` and its interval grows by 5 seconds (RFC 8628 §3.5), on any replica. Null on every
 * other row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await execScript(db, `ALTER TABLE oauth_records ADD COLUMN polled_at timestamptz(3), ADD COLUMN poll_interval integer`);
}
