import type { Middleware } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { AppDeps } from '../domain/deps';
import { principalFromClaims } from '../principal/access-token';
import { verifyAccessToken } from './verify';
import { revokeAccessToken } from './revocations';

/**
 * Introspection (RFC 7662) and revocation (RFC 7009) of our JWT access tokens
 * (docs/oauth.md#introspection-and-revocation). oidc-provider stores no JWT access token, so it
 * refuses them at both endpoints with `unsupported_token_type` — after it has authenticated the
 * client and checked the request. That refusal is answered here, by the rules the library applies
 * to the tokens it stores:
 * - introspection: `{active: false}` unless the token verifies, was issued to the calling
 *   (confidential) client, is not revoked and its member and client still hold (the API's own
 *   check); then its claims;
 * - revocation: 200 whatever the token; a live token of the calling client is revoked (its `jti`
 *   recorded until it would have expired), and fails on the API from the next request.
 */
export function answerStructuredTokens(deps: AppDeps): Middleware {
  return async (koaCtx, next) => {
    await next();
    const ctx = koaCtx as unknown as KoaContextWithOIDC;
    const route = ctx.oidc?.route;
    if (route !== 'introspection' && route !== 'revocation') return;
    if (ctx.status !== 400 || (ctx.body as { error?: unknown } | undefined)?.error !== 'unsupported_token_type') return;
    const client = ctx.oidc.client;
    const token = ctx.oidc.params?.token;
    if (!client || typeof token !== 'string') return;
    const now = deps.clock.now();
    const claims = await verifyAccessToken(deps.db, token, now, { issuer: deps.settings.publicBaseUrl });
    const own = claims !== null && claims.client_id === client.clientId;
    if (route === 'revocation') {
      if (own) await revokeAccessToken(deps.db, deps.secrets, claims);
      ctx.status = 200;
      ctx.body = '';
      return;
    }
    ctx.status = 200;
    ctx.body = { active: false };
    if (!own || client.clientAuthMethod === 'none') return;
    if (!(await principalFromClaims(deps.db, claims, now))) return;
    ctx.body = {
      active: true,
      iss: claims.iss,
      sub: claims.sub,
      aud: claims.aud,
      exp: claims.exp,
      iat: claims.iat,
      jti: claims.jti,
      client_id: claims.client_id,
      scope: claims.scope.join(' ') || undefined,
      org_id: claims.org_id,
      token_type: 'Bearer',
    };
  };
}
