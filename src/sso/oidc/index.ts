/**
 * The OIDC relying party of SSO sign-in (docs/sso.md#signing-in), on openid-client 6 (certified):
 * discovery through the egress policy, code flow with PKCE S256, state and nonce, ID-token
 * verification against the issuer's JWKS, UserInfo for e-mail and groups the ID token lacks, and
 * the RFC 9207 `iss` rules of docs/egress.md#oauth-callbacks. Holds no state: the sign-in service stores the
 * checks between start and callback.
 *
 *   const provider = await discoverOidc(deps.outbound, { issuer, clientId, clientSecret });
 *   const checks = newOidcChecks();                       // store state (hashed), nonce, verifier
 *   const url = await oidcAuthorizeUrl(provider, { redirectUri, scopes, checks });
 *   …
 *   const profile = await completeOidcSignIn(provider, query, { redirectUri, checks });
 *
 * Every failure is an OidcRejected (kind + safe message), never a library error.
 */
export { discoverOidc, newOidcChecks, oidcAuthorizeUrl, completeOidcSignIn } from './client';
export type { OidcClientSettings, OidcCallOptions, OidcProvider, OidcChecks, OidcProfile, OidcCallbackParams } from './client';
export { OidcRejected, type OidcFailure } from './errors';
