import type { components } from '../../../generated/api';
import type { AppDeps } from '../../domain/deps';
import { AppError, Invalid } from '../../lib/errors';

/**
 * `returnTo` (docs/sso.md#signing-in): an absolute http(s) URL whose origin is listed in
 * SSO_RETURN_ORIGINS, else 400 naming it. Stored with the login state; the browser is sent back
 * there with `code` (or `error`).
 */
export function checkReturnTo(deps: AppDeps, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw Invalid.at(['body', 'returnTo'], 'must be an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw Invalid.at(['body', 'returnTo'], 'must be an http or https URL');
  if (url.username || url.password) throw Invalid.at(['body', 'returnTo'], 'must not contain credentials');
  if (!deps.settings.ssoReturnOrigins.includes(url.origin)) {
    throw Invalid.at(['body', 'returnTo'], `the origin ${url.origin} is not one SSO_RETURN_ORIGINS allows`);
  }
  url.hash = '';
  return url.href;
}

/** `returnTo` with query parameters added (its own are kept). */
export function withParams(returnTo: string, params: Record<string, string>): string {
  const url = new URL(returnTo);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.href;
}

/** The error code a failure sends to `returnTo` as `error=` (the 403 reason, else the body's error). */
export function errorCodeOf(err: AppError): string {
  const body = err.body() as { error?: unknown; reason?: unknown };
  if (typeof body.reason === 'string') return body.reason;
  return typeof body.error === 'string' ? body.error : 'server_error';
}

/** What a completed SSO sign-in answers: the session itself, or a redirect carrying a one-time code. */
export type SignInOutcome =
  | { kind: 'session'; body: { ok: true; user: components['schemas']['User']; session: { token: string; expiresAt: string } } }
  | { kind: 'redirect'; location: string };
