import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { AppDeps } from '../domain/deps';
import { newId } from '../lib/ids';
import { RateLimited } from '../lib/errors';
import * as limits from '../protection/rate-limit';
import { OutboundError } from '../outbound';
import type { ClientKind } from './clients';

/**
 * Clients from outside any organization (docs/oauth.md#outside-clients), on two of the library's
 * features; what is ours is where they are kept, what they may be and how their documents are
 * fetched:
 * - dynamic registration (RFC 7591, `features.registration`), when `OAUTH_DCR=open`: the library
 *   validates the request and stores the client through the adapter into
 *   `oauth_registered_clients` (./registered-clients.ts). A registered client is public: whatever
 *   authentication method it asked for, it is registered with `none` (RFC 7591 §3.2.1 lets the
 *   server replace a requested value; the answer says what was registered) and gets no secret.
 *   No registration access token (RFC 7592's management is not offered).
 * - Client ID Metadata Documents (`features.clientIdMetadataDocument`, experimental, draft-02 as
 *   acknowledged below), when `OAUTH_CIMD=on`: an `https` client_id is fetched through the egress
 *   policy (`fetch` below, never a plain fetch), its `client_id` must equal the URL, and the
 *   library caches it by its caching headers between 30 s and 1 h.
 * Neither may claim to be one of ours: a client's kind is decided by how it came (its id, the
 * registration route), never by a field it sent, and an outside client has no organization or
 * member, no secret and no `client_credentials`.
 */
export const CIMD_ACK = 'draft-02';
export const CIMD_LIMITS = { timeoutMs: 5000, maxBytes: 64 * 1024, minCacheSeconds: 30, maxCacheSeconds: 3600 };
const CIMD_PURPOSE = 'client_id metadata document';

/** The grants an outside client may have (the device flow is organization clients', docs/oauth.md#device-flow). */
const OUTSIDE_GRANTS = ['authorization_code', 'refresh_token'];

type ClientMetadata = Record<string, unknown> & { client_id?: string; grant_types?: readonly string[] };

/** The kind of the client whose metadata the library is building, or undefined for one of ours (set by ./clients.ts). */
function outsideKind(ctx: KoaContextWithOIDC | undefined, metadata: ClientMetadata): ClientKind | undefined {
  if (ctx?.oidc?.route === 'registration') return 'dynamic';
  if (typeof metadata.client_id === 'string' && /^https:/i.test(metadata.client_id)) return 'metadata_document';
  return undefined;
}

/** `extraClientMetadata.validator`: runs on every client the library builds, before its own checks. */
export function outsideClientMetadata(ctx: KoaContextWithOIDC | undefined, key: string, _value: unknown, metadata: ClientMetadata): void {
  if (key !== 'client_kind') return;
  const kind = outsideKind(ctx, metadata);
  if (!kind) return;
  metadata.client_kind = kind;
  delete metadata.organization_id;
  delete metadata.member_id;
  if (kind === 'dynamic') {
    metadata.token_endpoint_auth_method = 'none';
    delete metadata.client_secret;
    delete metadata.client_secret_expires_at;
  }
  if (Array.isArray(metadata.grant_types)) metadata.grant_types = metadata.grant_types.filter((grant) => OUTSIDE_GRANTS.includes(grant));
}

export function outsideClientsConfiguration(deps: AppDeps): Pick<Configuration, 'fetch' | 'fetchResponseBodyLimits'> & { features: Pick<NonNullable<Configuration['features']>, 'registration' | 'clientIdMetadataDocument'> } {
  const { oauth } = deps.settings;
  return {
    features: {
      registration: {
        enabled: oauth.dynamicRegistration === 'open',
        idFactory: () => newId('oauthClient'),
        issueRegistrationAccessToken: false,
      },
      clientIdMetadataDocument: {
        enabled: oauth.clientIdMetadataDocuments,
        ack: CIMD_ACK,
        // A document asking for an authentication method but `none` is refused (the library already refuses shared secrets).
        allowClient: (_ctx: KoaContextWithOIDC, client) => client.clientAuthMethod === 'none',
        cacheDuration: { min: CIMD_LIMITS.minCacheSeconds, max: CIMD_LIMITS.maxCacheSeconds },
      } as NonNullable<Configuration['features']>['clientIdMetadataDocument'],
    },
    fetchResponseBodyLimits: { [CIMD_PURPOSE]: CIMD_LIMITS.maxBytes },
    fetch: outboundFetch(deps),
  };
}

/**
 * The library's `fetch` (metadata documents; nothing else it fetches is enabled) through the
 * egress policy (docs/egress.md#egress-policy): public addresses only, checked at connect time,
 * no redirect followed, 5 s and 64 KB. An egress refusal is a failed fetch to the library
 * (`invalid_client`).
 */
function outboundFetch(deps: AppDeps): NonNullable<Configuration['fetch']> {
  return async (url, options) => {
    const headers: Record<string, string> = { accept: 'application/json' };
    new Headers(options?.headers as HeadersInit | undefined).forEach((value, name) => {
      if (name !== 'user-agent' || value) headers[name] = value;
    });
    try {
      const res = await deps.outbound.request(String(url), { method: 'GET', headers, timeoutMs: CIMD_LIMITS.timeoutMs, maxBytes: CIMD_LIMITS.maxBytes });
      const answer = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        if (Array.isArray(value)) value.forEach((v) => answer.append(name, v));
        else if (value !== undefined) answer.set(name, value);
      }
      const empty = res.status === 204 || res.status === 304 || res.status < 200;
      return new Response(empty ? null : new Uint8Array(res.body), { status: res.status, headers: answer });
    } catch (err) {
      if (err instanceof OutboundError) {
        deps.logger.info({ event: 'oauth.client_metadata_fetch_refused', reason: err.kind, detail: err.message }, 'client metadata document not fetched');
      }
      throw err;
    }
  };
}

/**
 * The registration endpoint's gate. With registration off the library has no registration route
 * and Koa would answer a bare "Not Found": a client that tries anyway gets an OAuth error saying
 * why (404, no endpoint). With it open, every registration attempt counts against its address
 * (`RATE_LIMIT_CLIENT_REGISTRATION_IP`, the address the service's own request handling trusts):
 * a registration stores a client for 30 days, so an open endpoint must not let one caller fill the
 * table. Past the limit: 429 with Retry-After and `temporarily_unavailable`, the OAuth error for
 * "not now" (RFC 7591 defines none for it).
 */
export function registrationGate(deps: AppDeps) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    if (ctx.path !== '/reg') return next();
    if (deps.settings.oauth.dynamicRegistration !== 'open') {
      answer(ctx, 404, { error: 'invalid_request', error_description: 'dynamic client registration is not enabled on this server' });
      return;
    }
    if (ctx.method === 'POST') {
      try {
        await limits.consume(deps, 'clientRegistrationIp', (ctx.req as { ip?: string }).ip ?? '');
      } catch (err) {
        if (!(err instanceof RateLimited)) throw err;
        ctx.set(err.headers());
        answer(ctx, 429, { error: 'temporarily_unavailable', error_description: err.message });
        return;
      }
    }
    await next();
  };
}

function answer(ctx: KoaContextWithOIDC, status: number, body: { error: string; error_description: string }): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.set('cache-control', 'no-store');
  ctx.body = body;
}
