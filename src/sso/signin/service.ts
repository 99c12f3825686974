import { randomBytes } from 'node:crypto';
import type { AppDeps } from '../../domain/deps';
import { AppError, CodedError, Invalid, NotFound, Upstream } from '../../lib/errors';
import { sha256Hex } from '../../lib/crypto';
import { toUser } from '../../users/mappers';
import { findUser, type Origin } from '../../users/service';
import * as limits from '../../protection/rate-limit';
import { completeOidcSignIn, discoverOidc, newOidcChecks, oidcAuthorizeUrl, OidcRejected, type OidcCallbackParams, type OidcProvider } from '../oidc';
import type { SsoProfile } from './identity';
import { finishSignIn, openSsoSession, settle, stateRefused, usableConnection } from './finish';
import { checkReturnTo, type SignInOutcome } from './outcome';
import { startSaml } from './saml';
import * as store from './store';
import type { SignInConnection } from './store';

/** A started sign-in may take this long at the identity provider (login, MFA). */
const LOGIN_STATE_TTL_MS = 10 * 60_000;

const notConfigured = () => new NotFound('sso_not_configured', 'Single sign-on is not configured for this e-mail domain or connection.');

export function oidcRedirectUri(deps: AppDeps): string {
  return `${deps.settings.publicBaseUrl}/v1/auth/sso/oidc/callback`;
}

function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).trim().toLowerCase().replace(/\.$/, '');
}

async function discover(deps: AppDeps, connection: SignInConnection): Promise<OidcProvider> {
  return discoverOidc(deps.outbound, {
    issuer: connection.oidc_issuer!,
    clientId: connection.oidc_client_id!,
    clientSecret: deps.secrets.decrypt(connection.oidc_client_secret_sealed!),
  });
}

/** An OIDC refusal as the API answers it (docs/egress.md#oauth-callbacks for `iss` and provider errors). */
function fromOidc(err: OidcRejected): AppError {
  switch (err.kind) {
    case 'invalid_request':
      return Invalid.at(err.field ?? ['query'], err.message);
    case 'oauth_error':
      return new CodedError(400, 'oauth_error', err.message);
    case 'invalid_token':
      return Invalid.at(['query', 'code'], err.message);
    case 'provider_unavailable':
      return new Upstream('sso_provider_error', err.message);
  }
}

/**
 * POST /v1/auth/sso/start: finds the connection (by id, or the oldest enabled one of the
 * organization that verified the e-mail's domain), stores a login state (hashed; PKCE verifier
 * sealed) and answers the identity provider's URL and a `verifier` (256 random bits, stored
 * hashed) that binds the sign-in to the client that started it: the exchange of a `returnTo` code
 * must present it (login CSRF, RFC 9700 §4.7). Every start counts against a per-IP limit.
 */
export async function startSso(
  deps: AppDeps,
  input: { email?: string; connectionId?: string; returnTo?: string },
  ip = '',
): Promise<{ authorizeUrl: string; verifier: string }> {
  await limits.consume(deps, 'ssoStartIp', ip);
  if (!input.connectionId && !input.email) throw Invalid.at(['body', 'email'], 'give email or connectionId');
  const returnTo = input.returnTo === undefined ? null : checkReturnTo(deps, input.returnTo);
  const connection = input.connectionId
    ? await store.findConnection(deps.db, input.connectionId)
    : await store.findConnectionForDomain(deps.db, domainOf(input.email!));
  if (!connection || !connection.enabled) throw notConfigured();
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + LOGIN_STATE_TTL_MS);
  const verifier = randomBytes(32).toString('base64url');
  const base = { connectionId: connection.id, organizationId: connection.organization_id, returnTo, verifierHash: sha256Hex(verifier), now, expiresAt };

  if (connection.type === 'saml') return { authorizeUrl: await startSaml(deps, connection, base), verifier };

  let provider: OidcProvider;
  try {
    provider = await discover(deps, connection);
  } catch (err) {
    if (err instanceof OidcRejected) throw fromOidc(err);
    throw err;
  }
  const checks = newOidcChecks();
  const url = await oidcAuthorizeUrl(provider, { redirectUri: oidcRedirectUri(deps), scopes: connection.oidc_scopes ?? ['openid', 'email', 'profile'], checks });
  await store.insertLoginState(deps.db, {
    ...base,
    hash: sha256Hex(checks.state),
    codeVerifierSealed: deps.secrets.encrypt(checks.codeVerifier),
    nonce: checks.nonce,
    samlRequestId: null,
  });
  await store.deleteExpiredLoginStates(deps.db, now);
  return { authorizeUrl: url, verifier };
}

/**
 * GET /v1/auth/sso/oidc/callback. The state must be live; it is spent by the sign-in's own
 * transaction (or by a provider `error`), so a refused sign-in writes nothing at all. Once a state
 * is found, a failure goes back to its `returnTo` as `error=` when it has one.
 */
export async function completeOidc(deps: AppDeps, query: OidcCallbackParams, origin: Origin): Promise<SignInOutcome> {
  const { ip } = origin;
  await limits.assertNotLimited(deps, 'ssoIp', ip);
  const now = deps.clock.now();
  const row = query.state ? await store.findLoginState(deps.db, { hash: sha256Hex(query.state) }, now) : undefined;
  if (!row || row.saml_request_id !== null || !row.nonce || !row.code_verifier_sealed) {
    await limits.recordFailure(deps, 'ssoIp', ip);
    throw stateRefused(['query', 'state']);
  }
  const pending = { row, field: ['query', 'state'], origin };
  return settle(deps, pending, ip, async () => {
    const connection = await usableConnection(deps, pending, 'oidc');
    let profile: SsoProfile;
    try {
      const provider = await discover(deps, connection);
      const checks = { state: query.state!, nonce: row.nonce!, codeVerifier: deps.secrets.decrypt(row.code_verifier_sealed!) };
      profile = await completeOidcSignIn(provider, query, { redirectUri: oidcRedirectUri(deps), checks });
    } catch (err) {
      if (!(err instanceof OidcRejected)) throw err;
      // The provider ended the flow (`error`): that spends the state (docs/egress.md#oauth-callbacks).
      if (err.kind === 'oauth_error' && query.error !== undefined) await store.consumeLoginState(deps.db, row.state_hash, now);
      throw fromOidc(err);
    }
    return finishSignIn(deps, connection, profile, pending);
  });
}

/**
 * POST /v1/auth/sso/exchange: a code from `returnTo` and the `verifier` its start answered → the
 * session, once, within 60 s. A code without its own start's verifier (a victim's client handed an
 * attacker's code) is refused like an unknown one.
 */
export async function exchangeSsoCode(deps: AppDeps, input: { code: string; verifier: string }, origin: Origin) {
  const { ip } = origin;
  await limits.assertNotLimited(deps, 'ssoIp', ip);
  const now = deps.clock.now();
  const result = await deps.db.transaction().execute(async (trx) => {
    const row = await store.consumeExchangeCode(trx, sha256Hex(input.code), sha256Hex(input.verifier), now);
    if (!row || !row.connection_id) return null;
    const user = await findUser(trx, row.user_id);
    if (!user) return null;
    const session = await openSsoSession(trx, deps, { userId: user.id, organizationId: row.organization_id, connectionId: row.connection_id, origin }, now);
    return { ok: true as const, user: toUser(user), session };
  });
  if (!result) {
    await limits.recordFailure(deps, 'ssoIp', ip);
    throw Invalid.at(['body', 'code'], 'the code is not valid, has expired, was already used, or was not started with this verifier');
  }
  return result;
}
