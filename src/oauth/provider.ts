import type * as OidcProvider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { AppDeps } from '../domain/deps';
import { deriveKey } from '../lib/crypto';
import { lazy } from '../lib/lazy';
import { PERMISSION_KEYS } from '../access/permissions';
import { EXTRA_CLIENT_METADATA, findClient, verifyClientSecret, type ClientKind } from './clients';
import { recordsAdapter } from './records';
import { outsideClientMetadata, outsideClientsConfiguration, registrationGate } from './outside-clients';
import { saveRegisteredClient, touchRegisteredClient } from './registered-clients';
import { SIGNING_ALG, type SigningKeys } from './keys';
import { apiResource, OFFLINE_ACCESS, protectedResources } from './resources';
import { INTERACTION_PATH } from './interaction-path';
import { keyOf } from './records';
import { findGrantAuthorization, revokeForGrant, useGrant } from '../authorizations/service';
import { templateContext } from '../mail/queue';
import { devicePages, prefillFromLink } from './device-pages';
import { DEVICE_CODE_GRANT, devicePolling } from './device-polling';
import { limitCodeGuesses } from './device-guesses';
import { exchangedOf, TOKEN_EXCHANGE, TOKEN_EXCHANGE_PARAMS, tokenExchangeGrant } from './token-exchange';

// oidc-provider (Koa inside, ESM) loads when the authorization server first serves a request.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const oidcProvider = lazy(() => require('oidc-provider') as typeof OidcProvider);

export type Provider = OidcProvider.default;

/** The authorization request's own ask for offline_access (set by the front, never by the client). */
export const OFFLINE_ASKED = 'offline_access_asked';

/**
 * The authorization server is panva's oidc-provider (OpenID-certified), configured here
 * (docs/oauth.md#what-the-library-does): its endpoints, grants, client authentication, metadata,
 * JWKS, introspection, revocation and error answers are the library's. What is ours:
 * - storage in our database (./records.ts) and clients from our tables (./clients.ts), with the
 *   secret check on our hashes (`compareClientSecret`, the library's one comparison point);
 * - the signing keys (./keys.ts): a provider is built per key set, so a rotation makes a new one;
 * - the access token's claims (the JWT customizer): `sub` the member the token acts as, `org_id`,
 *   and, when the request named no scope, the client's registered scopes (RFC 6749 §3.3 lets the
 *   server pick a default; ours is "everything the client may have").
 */
export function createProvider(deps: AppDeps, keys: SigningKeys): Provider {
  const { settings } = deps;
  const { oauth } = settings;
  const resource = apiResource(settings.publicBaseUrl);
  const resources = new Set(protectedResources(settings.publicBaseUrl));
  const scopes = [...PERMISSION_KEYS, OFFLINE_ACCESS];
  const outside = outsideClientsConfiguration(deps);
  // A resource server of ours (RFC 8707): JWT access tokens for its audience; an unknown one is invalid_target.
  const resourceServerInfo = (identifier: string): OidcProvider.ResourceServer => {
    if (!resources.has(identifier)) throw new (oidcProvider().errors.InvalidTarget)();
    return {
      scope: PERMISSION_KEYS.join(' '),
      audience: identifier,
      accessTokenTTL: oauth.accessTokenTtlSeconds,
      accessTokenFormat: 'jwt' as const,
      jwt: { sign: { alg: SIGNING_ALG } },
    };
  };

  const configuration: Configuration = {
    adapter: recordsAdapter({
      db: deps.db,
      secrets: deps.secrets,
      // The request's context (the library's, Provider.ctx) lets a service account's secret check use what this lookup read.
      findClient: async (id) => withDeviceGrant(await findClient(deps.db, id, deps.clock.now(), oidcProvider().default.ctx), oauth.deviceFlow),
      saveClient: (id, payload) => saveRegisteredClient(deps.db, id, payload, deps.clock.now()),
      onGrantRevoked: (grantKey) => revokeForGrant(deps, grantKey),
    }),
    jwks: { keys: keys.jwks as NonNullable<Configuration['jwks']>['keys'] },
    cookies: { keys: [deriveKey(settings.secretKey!, 'oauth-cookies').toString('base64url')] },
    scopes,
    claims: { openid: ['sub'] },
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    extraClientMetadata: { properties: [...EXTRA_CLIENT_METADATA], validator: outsideClientMetadata },
    fetch: outside.fetch,
    fetchResponseBodyLimits: outside.fetchResponseBodyLimits,
    responseTypes: ['code'],
    // OpenID Connect drops offline_access without prompt=consent; OAuth 2.1 clients (MCP) ask for it
    // plainly. The front copies the ask here before the library reads the request (see below).
    extraParams: [OFFLINE_ASKED],
    // A refresh token when the member approved offline_access for a client that may refresh.
    issueRefreshToken: async (_ctx: KoaContextWithOIDC, client, code) => {
      if (!client.grantTypeAllowed('refresh_token')) return false;
      if (code.scopes.has(OFFLINE_ACCESS)) return true;
      const grantId = (code as { grantId?: string }).grantId;
      const authorization = grantId ? await findGrantAuthorization(deps, keyOf('Grant', grantId)) : undefined;
      return authorization?.scopes.includes(OFFLINE_ACCESS) ?? false;
    },
    pkce: { required: () => true },
    ttl: {
      AccessToken: oauth.accessTokenTtlSeconds,
      ClientCredentials: oauth.accessTokenTtlSeconds,
      RefreshToken: oauth.refreshTokenTtlSeconds,
      AuthorizationCode: 60,
      DeviceCode: 600,
      Grant: oauth.refreshTokenTtlSeconds,
      Interaction: 3600,
      Session: 14 * 24 * 3600,
    },
    // Sign-in and consent are our pages (./interactions.ts), at the issuer's origin.
    interactions: { url: (_ctx: KoaContextWithOIDC, interaction) => `${INTERACTION_PATH}/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      clientCredentials: { enabled: true },
      // RFC 8628 (OAUTH_DEVICE_FLOW): codes of 8 letters without vowels or look-alikes, shown as XXXX-XXXX; our pages (./device-pages.ts).
      deviceFlow: { enabled: oauth.deviceFlow, charset: 'base-20', mask: '****-****', ...devicePages(deps.db, templateContext(settings.mail).productName) },
      ...outside.features,
      introspection: {
        enabled: true,
        // RFC 7662 for confidential clients, of their own tokens only (another client's: active false).
        allowedPolicy: (ctx: KoaContextWithOIDC, client, token) => client.clientAuthMethod !== 'none' && token.clientId === client.clientId,
      },
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx: KoaContextWithOIDC, client, token) => token.clientId === client.clientId,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: KoaContextWithOIDC, identifier: string) => resourceServerInfo(identifier),
      },
    },
    formats: {
      customizers: {
        // RFC 9068 claims as the service defines them (docs/oauth.md#access-tokens).
        jwt: async (_ctx: KoaContextWithOIDC, token, jwt) => {
          const metadata = token.client?.metadata() as { client_kind?: ClientKind; organization_id?: string; member_id?: string; scope?: string } | undefined;
          if (token.kind === 'AccessToken') {
            // A member's token (authorization code, refresh, device): its organization and
            // authorization are the grant's; a revoked authorization issues nothing more.
            const grantId = (token as { grantId?: string }).grantId;
            const authorization = grantId ? await useGrant(deps, keyOf('Grant', grantId)) : undefined;
            if (!authorization || authorization.member_id !== (token as { accountId?: string }).accountId) throw new (oidcProvider().errors.InvalidGrant)('the authorization was revoked');
            jwt.payload.org_id = authorization.organization_id;
            jwt.payload.authorization_id = authorization.id;
            if (metadata?.client_kind === 'dynamic' && token.clientId) await touchRegisteredClient(deps.db, token.clientId, deps.clock.now());
            return;
          }
          // A token a worker exchanged for a member (./token-exchange.ts): the member, the worker as actor, the delegation.
          const exchanged = exchangedOf(token);
          if (exchanged) {
            jwt.payload.sub = exchanged.memberId;
            jwt.payload.act = { sub: exchanged.actor };
            jwt.payload.org_id = exchanged.organizationId;
            jwt.payload.authorization_id = exchanged.authorizationId;
            return;
          }
          if (!metadata?.organization_id) throw new Error('access token for a client without an organization');
          if (token.kind === 'ClientCredentials') {
            // A worker's own token: `sub` is the worker (the library's default, its client id); a service account's, its member.
            if (metadata.client_kind !== 'worker') {
              if (!metadata.member_id) throw new Error('client_credentials for a client that acts as no member');
              jwt.payload.sub = metadata.member_id;
            }
            if (!token.scope) {
              token.scope = metadata.scope || undefined;
              jwt.payload.scope = token.scope;
            }
          }
          jwt.payload.org_id = metadata.organization_id;
        },
      },
    },
    // Answers of the library's own error pages stay JSON-shaped for API clients; HTML is the next step's consent pages.
    renderError: (ctx, out) => {
      ctx.type = 'application/json';
      ctx.body = out;
    },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  };

  const Provider = oidcProvider().default;
  const provider = new Provider(settings.publicBaseUrl, configuration);
  provider.use(prefillFromLink);
  provider.use(limitCodeGuesses(deps, templateContext(settings.mail).productName));
  provider.use(devicePolling(deps));
  provider.use(registrationGate(deps));
  provider.registerGrantType(TOKEN_EXCHANGE, tokenExchangeGrant(deps, oidcProvider().errors, resourceServerInfo, resource, oauth.accessTokenTtlSeconds), TOKEN_EXCHANGE_PARAMS);
  provider.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/auth') {
      const scope = ctx.query.scope;
      if (typeof scope === 'string' && scope.split(' ').includes(OFFLINE_ACCESS)) ctx.query = { ...ctx.query, [OFFLINE_ASKED]: 'true' };
      else if (OFFLINE_ASKED in ctx.query) ctx.query = Object.fromEntries(Object.entries(ctx.query).filter(([k]) => k !== OFFLINE_ASKED));
    }
    await next();
  });
  // The service's public address is PUBLIC_BASE_URL (the front sets X-Forwarded-Host/Proto from it).
  provider.proxy = true;
  // Secrets are stored hashed: the one place the library compares a client secret checks ours.
  const db = deps.db;
  const clock = deps.clock;
  provider.Client.prototype.compareClientSecret = function compareClientSecret(this: OidcProvider.Client, actual: string) {
    const kind = (this.metadata() as { client_kind?: ClientKind }).client_kind;
    return verifyClientSecret(db, { clientId: this.clientId, kind }, actual, clock.now(), oidcProvider().default.ctx);
  } as unknown as OidcProvider.Client['compareClientSecret'];
  return provider;
}

/** Organization clients may use the device flow while it is on (docs/oauth.md#device-flow); other clients as they are. */
function withDeviceGrant<T extends { client_kind?: string; grant_types?: readonly string[] }>(metadata: T | undefined, deviceFlow: boolean): T | undefined {
  if (!metadata || !deviceFlow || metadata.client_kind !== 'organization') return metadata;
  return { ...metadata, grant_types: [...(metadata.grant_types ?? []), DEVICE_CODE_GRANT] };
}
