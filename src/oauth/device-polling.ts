import { sql } from 'kysely';
import type { Middleware } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../db/schema';
import type { Clock } from '../lib/clock';
import { keyOf } from './records';

/**
 * The device flow's polling rules the library leaves to the server (RFC 8628 §3.2, §3.5;
 * docs/oauth.md#device-flow). oidc-provider answers the device authorization request without an
 * `interval` and never says `slow_down`; this middleware, after the library has answered:
 * - adds `interval: 5` to a device authorization answer;
 * - when a device code's poll is answered `authorization_pending`, records the poll on the code's
 *   row (oauth_records, one statement: any replica sees the last poll) and, when it came sooner
 *   than the code's interval after the previous one, answers `slow_down` instead and adds 5 seconds
 *   to that code's interval for every later poll.
 * `expired_token` and `access_denied` are the library's answers.
 */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
export const POLL_INTERVAL_SECONDS = 5;
const SLOW_DOWN_STEP_SECONDS = 5;

export function devicePolling(deps: { db: Db; clock: Clock }): Middleware {
  return async (koaCtx, next) => {
    await next();
    const ctx = koaCtx as unknown as KoaContextWithOIDC;
    const route = ctx.oidc?.route;
    const body = ctx.body as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object') return;
    if (route === 'device_authorization' && ctx.status === 200 && typeof body.device_code === 'string') {
      ctx.body = { ...body, interval: POLL_INTERVAL_SECONDS };
      return;
    }
    if (route !== 'token' || ctx.status !== 400 || body.error !== 'authorization_pending') return;
    const deviceCode = ctx.oidc.params?.device_code;
    if (ctx.oidc.params?.grant_type !== DEVICE_CODE_GRANT || typeof deviceCode !== 'string') return;
    if (await pollTooSoon(deps.db, keyOf('DeviceCode', deviceCode), deps.clock.now())) {
      ctx.body = { error: 'slow_down', error_description: `you are polling too quickly: wait the interval, now ${SLOW_DOWN_STEP_SECONDS} seconds longer, between requests` };
    }
  };
}

/** Records a poll of the device code's row at `now`; true when it came sooner than the row's interval after the last one (the interval then grows). */
export async function pollTooSoon(db: Db, key: string, now: Date): Promise<boolean> {
  const result = await sql<{ slowed: boolean }>`
    UPDATE oauth_records AS r
    SET polled_at = ${now},
        poll_interval = CASE
          WHEN p.polled_at IS NOT NULL AND ${now} < p.polled_at + make_interval(secs => coalesce(p.poll_interval, ${POLL_INTERVAL_SECONDS}))
          THEN coalesce(p.poll_interval, ${POLL_INTERVAL_SECONDS}) + ${SLOW_DOWN_STEP_SECONDS}
          ELSE coalesce(p.poll_interval, ${POLL_INTERVAL_SECONDS})
        END
    FROM (SELECT id, polled_at, poll_interval FROM oauth_records WHERE id = ${key} FOR UPDATE) AS p
    WHERE r.id = p.id
    RETURNING r.poll_interval > coalesce(p.poll_interval, ${POLL_INTERVAL_SECONDS}) AS slowed`.execute(db);
  return result.rows[0]?.slowed === true;
}
