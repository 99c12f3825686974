// Scenarios 18 and 19's additions to the Better Auth peer (better-auth-server.mjs, BETTER_AUTH_OAUTH=on):
// its OAuth 2.1 provider (@better-auth/oauth-provider, the pinned devDependency) with the JWT
// plugin it signs access tokens with, and the bearer plugin (a session token in `Authorization`).
// Defaults everywhere except what a fair comparison needs:
// - the provider's own rate limits are off (its token endpoint allows 20 requests a minute by
//   default; the bench sends thousands a second from one address): it only makes the peer faster;
// - `clientPrivileges` grants every action to a signed-in user, so a client can be given
//   client-credentials scopes (without the callback the provider refuses to configure them);
// - one resource (RFC 8707), `<baseURL>/v1`, that the clients are linked to: a token request that
//   names it gets a JWT access token (without a resource the provider issues an opaque one);
// - the JWT plugin signs RS256, as the service and bare oidc-provider do (its default is EdDSA).
// `setupRoute` answers POST /bench/oauth-setup (loopback only): the bench's clients, made through
// the provider's own admin API, and refresh tokens of the caller written through its adapter as
// its token endpoint writes them (hashed, linked to the public client and the resource).
import { Buffer } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import { bearer, jwt } from 'better-auth/plugins';
import { oauthProvider } from '@better-auth/oauth-provider';

export const SCOPES = ['openid', 'offline_access', 'members.read', 'teams.read'];

export function resourceOf(baseURL) {
  return `${baseURL}/v1`;
}

export function oauthPlugins(baseURL) {
  return [
    jwt({ jwks: { keyPairConfig: { alg: 'RS256', modulusLength: 2048 } } }),
    bearer(),
    oauthProvider({
      loginPage: '/sign-in',
      consentPage: '/consent',
      scopes: SCOPES,
      resources: [resourceOf(baseURL)],
      clientPrivileges: () => true,
      rateLimit: { token: false, authorize: false, introspect: false, revoke: false, register: false, rotateClientKeys: false, userinfo: false },
    }),
  ];
}

/** Its stored form of a token (`storeTokens: "hashed"`, the default): SHA-256, base64url without padding. */
const stored = (token) => createHash('sha256').update(token).digest('base64url');

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

/**
 * Body: `{ userId, refreshTokens }`, with the caller's session cookie. Answers the M2M client (its
 * id and secret, client-credentials scope teams.read), the public client refresh tokens belong
 * to, the refresh tokens, and the resource.
 */
export function setupRoute(auth, baseURL) {
  const resource = resourceOf(baseURL);
  return async (req, res) => {
    try {
      const { userId, refreshTokens = 0 } = await readJson(req);
      const headers = new globalThis.Headers({ cookie: req.headers.cookie ?? '' });
      const m2m = await auth.api.adminCreateOAuthClient({
        headers,
        body: { client_name: 'Bench robot', token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], client_credentials_scopes: ['teams.read'], resources: [resource] },
      });
      const pub = await auth.api.adminCreateOAuthClient({
        headers,
        body: {
          client_name: 'Bench agent',
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          redirect_uris: ['https://agent.bench.test/cb'],
          scope: 'members.read offline_access',
          resources: [resource],
        },
      });
      const ctx = await auth.$context;
      const now = Date.now();
      const tokens = [];
      for (let i = 0; i < refreshTokens; i++) {
        const token = randomBytes(24).toString('base64url');
        await ctx.adapter.create({
          model: 'oauthRefreshToken',
          data: { token: stored(token), clientId: pub.client_id, userId, scopes: ['members.read', 'offline_access'], resources: [resource], authTime: new Date(now), createdAt: new Date(now), expiresAt: new Date(now + 30 * 86_400_000) },
        });
        tokens.push(token);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ m2m: { clientId: m2m.client_id, clientSecret: m2m.client_secret }, publicClientId: pub.client_id, refreshTokens: tokens, resource }));
    } catch (err) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(err?.stack ?? err), body: err?.body }));
    }
  };
}
