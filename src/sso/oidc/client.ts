import type * as OpenIdClient from 'openid-client';
import { OutboundError, type Outbound } from '../../outbound';
import { OidcRejected } from './errors';
import { outboundFetch } from './fetch';
import { lazy } from '../../lib/lazy';

// openid-client (with oauth4webapi and jose) loads on the first OIDC sign-in, not at start: most
// processes never serve one (src/lib/lazy.ts).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const openIdClient = lazy(() => require('openid-client') as typeof OpenIdClient);

/** An SSO connection's OIDC settings (the client secret already unsealed). */
export interface OidcClientSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

export interface OidcCallOptions {
  /** Bound on each call to the provider (discovery, JWKS, token, UserInfo). */
  timeoutMs?: number;
}

/** A discovered provider: openid-client's configuration for one connection's client. */
export interface OidcProvider {
  readonly issuer: string;
  readonly config: OpenIdClient.Configuration;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Fetches `{issuer}/.well-known/openid-configuration` through the egress policy and checks that
 * the document names the same issuer. Plain http is accepted only for an issuer whose host is an
 * address listed in OUTBOUND_ALLOWED_NETWORKS (the same rule as the write-time check); every
 * endpoint the document names is reached through the policy too.
 */
export async function discoverOidc(outbound: Outbound, settings: OidcClientSettings, options: OidcCallOptions = {}): Promise<OidcProvider> {
  const oidc = openIdClient();
  let issuer: URL;
  try {
    issuer = new URL(settings.issuer);
  } catch {
    throw new OidcRejected('provider_unavailable', 'The connection issuer is not a valid URL.');
  }
  const insecure = issuer.protocol === 'http:' && outbound.policy.isListed(issuer.hostname.replace(/^\[|\]$/g, ''));
  if (issuer.protocol !== 'https:' && !insecure) throw new OidcRejected('provider_unavailable', 'The connection issuer must be an https URL.');
  try {
    const config = await oidc.discovery(issuer, settings.clientId, settings.clientSecret, undefined, {
      [oidc.customFetch]: outboundFetch(outbound, options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      execute: insecure ? [oidc.allowInsecureRequests] : [],
    });
    return { issuer: config.serverMetadata().issuer, config };
  } catch (err) {
    throw new OidcRejected('provider_unavailable', `The identity provider's discovery document could not be used: ${reason(err)}.`);
  }
}

/** Values the sign-in keeps between start and callback (state and nonce, the PKCE verifier). */
export interface OidcChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export function newOidcChecks(): OidcChecks {
  const oidc = openIdClient();
  return { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier() };
}

/** The authorization URL: code flow, PKCE S256, state and nonce; `openid` is always asked for. */
export async function oidcAuthorizeUrl(
  provider: OidcProvider,
  request: { redirectUri: string; scopes: readonly string[]; checks: OidcChecks },
): Promise<string> {
  const oidc = openIdClient();
  const scopes = request.scopes.includes('openid') ? request.scopes : ['openid', ...request.scopes];
  const url = oidc.buildAuthorizationUrl(provider.config, {
    redirect_uri: request.redirectUri,
    response_type: 'code',
    scope: scopes.join(' '),
    state: request.checks.state,
    nonce: request.checks.nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(request.checks.codeVerifier),
    code_challenge_method: 'S256',
  });
  return url.href;
}

/** Who signed in, as the provider vouches for it. */
export interface OidcProfile {
  subject: string;
  /** null when the provider sent none, or sent one it marks `email_verified: false`. */
  email: string | null;
  name: string | null;
  groups: string[];
}

/** The response parameters the relying party reads; any others are ignored (RFC 6749 §4.1.2). */
export type OidcCallbackParams = Partial<Record<'code' | 'state' | 'iss' | 'error' | 'error_description', string>>;

/**
 * Completes a sign-in from the callback's parameters. The caller has already matched `state` to a
 * stored login state and passes what it stored. Checks, in order: `iss` (RFC 9207: present → must
 * be this issuer; absent → refused when discovery advertises
 * `authorization_response_iss_parameter_supported`), the provider's `error`, then the code
 * exchange (PKCE verifier), the ID token (signature against the issuer's JWKS, iss, aud, exp,
 * nonce), and UserInfo when the ID token lacks the e-mail or groups.
 */
export async function completeOidcSignIn(
  provider: OidcProvider,
  params: OidcCallbackParams,
  expected: { redirectUri: string; checks: OidcChecks },
): Promise<OidcProfile> {
  const oidc = openIdClient();
  const metadata = provider.config.serverMetadata();
  if (params.iss !== undefined && params.iss !== provider.issuer) {
    throw new OidcRejected('invalid_request', 'The iss parameter does not name the issuer this sign-in was started with.', ['query', 'iss']);
  }
  if (params.iss === undefined && metadata.authorization_response_iss_parameter_supported === true) {
    throw new OidcRejected('invalid_request', 'The iss parameter is missing; this issuer always sends it.', ['query', 'iss']);
  }
  if (params.error !== undefined) {
    const description = params.error_description ? `: ${params.error_description.slice(0, 300)}` : '';
    throw new OidcRejected('oauth_error', `The identity provider answered ${params.error.slice(0, 100)}${description}`);
  }
  if (!params.code) throw new OidcRejected('invalid_request', 'The code parameter is missing.', ['query', 'code']);
  if (params.state !== expected.checks.state) throw new OidcRejected('invalid_request', 'The state parameter does not match.', ['query', 'state']);

  // Only the parameters read here reach openid-client (it refuses e.g. an `id_token` parameter).
  const current = new URL(expected.redirectUri);
  current.search = '';
  for (const key of ['code', 'state', 'iss'] as const) if (params[key] !== undefined) current.searchParams.set(key, params[key]!);

  try {
    const tokens = await oidc.authorizationCodeGrant(provider.config, current, {
      pkceCodeVerifier: expected.checks.codeVerifier,
      expectedState: expected.checks.state,
      expectedNonce: expected.checks.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new OidcRejected('invalid_token', 'The identity provider returned no ID token.');
    let profile = profileOf(claims.sub, claims);
    const lacks = !('email' in claims) || !Array.isArray(claims.groups);
    if (lacks && metadata.userinfo_endpoint && tokens.access_token) {
      const info = await oidc.fetchUserInfo(provider.config, tokens.access_token, claims.sub);
      profile = {
        subject: claims.sub,
        email: 'email' in claims ? profile.email : profileOf(claims.sub, info).email,
        name: profile.name ?? profileOf(claims.sub, info).name,
        groups: Array.isArray(claims.groups) ? profile.groups : profileOf(claims.sub, info).groups,
      };
    }
    return profile;
  } catch (err) {
    throw rejection(err);
  }
}

const MAX_GROUPS = 1000;

function profileOf(subject: string, claims: Record<string, unknown>): OidcProfile {
  const email = typeof claims.email === 'string' && claims.email.includes('@') && claims.email_verified !== false ? claims.email : null;
  const groups = Array.isArray(claims.groups) ? claims.groups.filter((g): g is string => typeof g === 'string').slice(0, MAX_GROUPS) : [];
  return { subject, email, name: typeof claims.name === 'string' ? claims.name : null, groups };
}

/** Sorts a failure of the exchange into the kinds of OidcRejected, with a message safe to show. */
function rejection(err: unknown): OidcRejected {
  if (err instanceof OidcRejected) return err;
  const oidc = openIdClient();
  if (err instanceof oidc.AuthorizationResponseError) return new OidcRejected('oauth_error', `The identity provider answered ${err.error}`);
  if (err instanceof oidc.ResponseBodyError) return new OidcRejected('oauth_error', `The identity provider refused the code: ${err.error}`);
  if (err instanceof oidc.WWWAuthenticateChallengeError) return new OidcRejected('oauth_error', 'The identity provider refused the access token at UserInfo.');
  const outbound = outboundCause(err);
  if (outbound) return new OidcRejected('provider_unavailable', `The identity provider ${outbound.message}.`);
  const code = (err as { code?: string }).code;
  const unavailable = ['OAUTH_TIMEOUT', 'OAUTH_ABORT', 'OAUTH_RESPONSE_IS_NOT_CONFORM', 'OAUTH_RESPONSE_IS_NOT_JSON', 'OAUTH_PARSE_ERROR'];
  if (code && unavailable.includes(code)) return new OidcRejected('provider_unavailable', `The identity provider's reply could not be used: ${reason(err)}.`);
  return new OidcRejected('invalid_token', `The identity provider's tokens failed verification: ${reason(err)}.`);
}

function outboundCause(err: unknown): OutboundError | null {
  for (let cause = err, depth = 0; cause && depth < 8; cause = (cause as { cause?: unknown }).cause, depth++) {
    if (cause instanceof OutboundError) return cause;
  }
  return null;
}

/** openid-client's own message (never a token: its messages name checks, not values). */
function reason(err: unknown): string {
  const outbound = outboundCause(err);
  if (outbound) return outbound.message;
  const message = err instanceof Error ? err.message : 'unknown failure';
  return message.replace(/[\r\n]+/g, ' ').slice(0, 200);
}
