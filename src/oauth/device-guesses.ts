import type { Middleware } from 'koa';
import type { AppDeps } from '../domain/deps';
import { AppError } from '../lib/errors';
import { html, page, PAGE_HEADERS } from '../pages/layout';
import * as limits from '../protection/rate-limit';

/**
 * Guessing user codes (RFC 8628 §5.1; docs/oauth.md#device-flow): a code the library does not
 * know, typed on the code page, counts as a failed sign-in from the browser's address
 * (`RATE_LIMIT_SIGN_IN_IP`, the limit that already holds password guesses), and once the address
 * has used its window up the code page answers 429 before the library looks the code up. The
 * address is the one the service's own request handling trusts (`TRUST_PROXY`), not a header the
 * library would read.
 */
export const CODE_NOT_FOUND = 'deviceUserCodeNotFound';

export function limitCodeGuesses(deps: AppDeps, productName: string): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'POST' || ctx.path !== '/device') return next();
    const ip = (ctx.req as { ip?: string }).ip ?? '';
    try {
      await limits.assertNotLimited(deps, 'signInIp', ip);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 429) throw err;
      ctx.status = 429;
      ctx.set(PAGE_HEADERS);
      ctx.body = page('Connect a device', html`<h1>Connect a device</h1><p class="error" role="alert">Too many wrong codes came from your network. Wait a few minutes, then open this page again and enter the code your device shows.</p>`, productName);
      return;
    }
    await next();
    if (ctx.state[CODE_NOT_FOUND] === true) await limits.recordFailure(deps, 'signInIp', ip);
  };
}
