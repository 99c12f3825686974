/**
 * Why an OIDC sign-in failed, in words safe to show (no token, secret or stack). The sign-in
 * service maps each kind to its HTTP answer:
 * - `invalid_request`: the callback itself is wrong (`iss` missing or foreign, no `code`); `field`
 *   names the query parameter (docs/egress.md#oauth-callbacks).
 * - `oauth_error`: the provider said no (`error` in the callback, or an OAuth error from its token
 *   endpoint such as `invalid_grant`); the provider's code is in the message.
 * - `invalid_token`: the provider's reply failed verification (ID-token signature against the
 *   issuer's JWKS, `iss`, `aud`, `exp`, `nonce`, UserInfo subject).
 * - `provider_unavailable`: discovery, JWKS, token or UserInfo could not be fetched (refused by the
 *   egress policy, unreachable, timeout, malformed reply).
 */
export type OidcFailure = 'invalid_request' | 'oauth_error' | 'invalid_token' | 'provider_unavailable';

export class OidcRejected extends Error {
  constructor(
    readonly kind: OidcFailure,
    message: string,
    /** For `invalid_request`: the callback parameter at fault, e.g. ['query', 'iss']. */
    readonly field?: string[],
  ) {
    super(message);
  }
}
