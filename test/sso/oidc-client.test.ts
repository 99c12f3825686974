import type { LookupFunction } from 'node:net';
import { createOutbound } from '../../src/outbound';
import { completeOidcSignIn, discoverOidc, newOidcChecks, oidcAuthorizeUrl, OidcRejected, type OidcCallbackParams, type OidcProvider } from '../../src/sso/oidc';
import { OidcIdp } from '../fakes/oidc-idp';

/**
 * The OIDC relying party (src/sso/oidc) against oidc-provider running in-process: one issuer that
 * sends e-mail and groups only through UserInfo, a second that puts them in the ID token (and
 * shares the client id, as a mix-up attacker's issuer would).
 */
const REDIRECT_URI = 'http://localhost:3000/v1/auth/sso/oidc/callback';
const CLIENT = { clientId: 'cp-client', clientSecret: 'cp-client-secret-0123456789', redirectUris: [REDIRECT_URI] };
const SCOPES = ['openid', 'email', 'profile', 'groups'];
const local = createOutbound({ allowedNetworks: ['127.0.0.0/8'] });

let idp: OidcIdp;
let second: OidcIdp;
beforeAll(async () => {
  [idp, second] = await Promise.all([OidcIdp.start({ clients: [CLIENT] }), OidcIdp.start({ clients: [CLIENT], claimsInIdToken: true })]);
});
afterAll(async () => {
  await Promise.all([idp?.stop(), second?.stop()]);
});

async function providerOf(server: OidcIdp): Promise<OidcProvider> {
  return discoverOidc(local, { issuer: server.issuer, clientId: CLIENT.clientId, clientSecret: CLIENT.clientSecret });
}

/** Starts a sign-in at `server` and logs `account` in; returns the callback's parameters and the checks. */
async function signInAt(server: OidcIdp, account: string) {
  const provider = await providerOf(server);
  const checks = newOidcChecks();
  const url = await oidcAuthorizeUrl(provider, { redirectUri: REDIRECT_URI, scopes: SCOPES, checks });
  const back = await server.login(url, account);
  const params = Object.fromEntries(back.searchParams) as OidcCallbackParams & Record<string, string>;
  return { provider, checks, params, back };
}

async function rejected(promise: Promise<unknown>): Promise<OidcRejected> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OidcRejected);
  return err as OidcRejected;
}

describe('discovery through the egress policy', () => {
  test('an issuer whose name resolves to loopback is refused at connect time', async () => {
    const port = new URL(idp.issuer).port;
    const lookup = ((_host: string, _options: unknown, callback: (err: Error | null, addresses: { address: string; family: number }[]) => void) =>
      callback(null, [{ address: '127.0.0.1', family: 4 }])) as unknown as LookupFunction;
    const err = await rejected(discoverOidc(createOutbound({ lookup }), { issuer: `https://idp.example.com:${port}`, clientId: 'x', clientSecret: 'y' }));
    expect(err.kind).toBe('provider_unavailable');
    expect(err.message).toMatch(/idp\.example\.com resolves to 127\.0\.0\.1 is not allowed/);
  });

  test('a loopback http issuer only when OUTBOUND_ALLOWED_NETWORKS lists it', async () => {
    const err = await rejected(discoverOidc(createOutbound(), { issuer: idp.issuer, clientId: 'x', clientSecret: 'y' }));
    expect(err.kind).toBe('provider_unavailable');
    const provider = await providerOf(idp);
    expect(provider.issuer).toBe(idp.issuer);
  });

  test('plain http only for a listed address', async () => {
    const err = await rejected(discoverOidc(local, { issuer: 'http://idp.example.com', clientId: 'x', clientSecret: 'y' }));
    expect(err.kind).toBe('provider_unavailable');
    expect(err.message).toMatch(/https/);
  });

  test('a document naming another issuer is refused', async () => {
    const err = await rejected(discoverOidc(local, { issuer: `${idp.issuer}/tenant`, clientId: 'x', clientSecret: 'y' }));
    expect(err.kind).toBe('provider_unavailable');
  });
});

describe('sign-in', () => {
  test('the authorization URL asks for the code flow with PKCE S256, state and nonce', async () => {
    const provider = await providerOf(idp);
    const checks = newOidcChecks();
    const url = new URL(await oidcAuthorizeUrl(provider, { redirectUri: REDIRECT_URI, scopes: ['email'], checks }));
    expect(url.origin).toBe(idp.issuer);
    expect(url.searchParams.get('response_type')).toBe('code');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('code_challenge')).not.toBe(checks.codeVerifier);
    expect(url.searchParams.get('state')).toBe(checks.state);
    expect(url.searchParams.get('nonce')).toBe(checks.nonce);
    expect(url.searchParams.get('scope')).toBe('openid email');
  });

  test('e-mail and groups from UserInfo when the ID token lacks them', async () => {
    const { provider, checks, params } = await signInAt(idp, 'acct-alice');
    expect(params.iss).toBe(idp.issuer);
    const profile = await completeOidcSignIn(provider, params, { redirectUri: REDIRECT_URI, checks });
    expect(profile).toEqual({ subject: 'acct-alice', email: 'alice@acme.test', name: 'Alice', groups: ['engineering', 'admins'] });
  });

  test('e-mail and groups from the ID token', async () => {
    const { provider, checks, params } = await signInAt(second, 'acct-alice');
    const profile = await completeOidcSignIn(provider, params, { redirectUri: REDIRECT_URI, checks });
    expect(profile).toEqual({ subject: 'acct-alice', email: 'alice@acme.test', name: 'Alice', groups: ['engineering', 'admins'] });
  });

  test('an account without e-mail', async () => {
    const { provider, checks, params } = await signInAt(idp, 'acct-noemail');
    const profile = await completeOidcSignIn(provider, params, { redirectUri: REDIRECT_URI, checks });
    expect(profile).toEqual({ subject: 'acct-noemail', email: null, name: 'No Mail', groups: ['engineering'] });
  });

  test('an e-mail the provider marks unverified is not used', async () => {
    idp.accounts['acct-unverified'] = { email: 'eve@acme.test', emailVerified: false };
    const { provider, checks, params } = await signInAt(idp, 'acct-unverified');
    const profile = await completeOidcSignIn(provider, params, { redirectUri: REDIRECT_URI, checks });
    expect(profile.email).toBeNull();
  });

  test('unknown callback parameters are ignored', async () => {
    const { provider, checks, params } = await signInAt(idp, 'acct-bob');
    const extra = { ...params, session_state: 'abc.def', id_token: 'not-a-token', foo: 'bar' };
    const profile = await completeOidcSignIn(provider, extra, { redirectUri: REDIRECT_URI, checks });
    expect(profile.subject).toBe('acct-bob');
  });

  test('a code works once', async () => {
    const { provider, checks, params } = await signInAt(idp, 'acct-bob');
    await completeOidcSignIn(provider, params, { redirectUri: REDIRECT_URI, checks });
    const err = await rejected(completeOidcSignIn(provider, params, { redirectUri: REDIRECT_URI, checks }));
    expect(err.kind).toBe('oauth_error');
    expect(err.message).toMatch(/invalid_grant/);
  });
});

describe('refusals', () => {
  test('a callback without iss is refused when the issuer advertises it', async () => {
    const { provider, checks, params } = await signInAt(idp, 'acct-alice');
    expect(provider.config.serverMetadata().authorization_response_iss_parameter_supported).toBe(true);
    const { iss: _iss, ...withoutIss } = params;
    const err = await rejected(completeOidcSignIn(provider, withoutIss, { redirectUri: REDIRECT_URI, checks }));
    expect(err).toMatchObject({ kind: 'invalid_request', field: ['query', 'iss'] });
  });

  test('a wrong iss is refused', async () => {
    const { provider, checks, params } = await signInAt(idp, 'acct-alice');
    const err = await rejected(completeOidcSignIn(provider, { ...params, iss: second.issuer }, { redirectUri: REDIRECT_URI, checks }));
    expect(err).toMatchObject({ kind: 'invalid_request', field: ['query', 'iss'] });
  });

  test("a second issuer's code is not accepted for the first issuer's flow", async () => {
    const first = await providerOf(idp);
    const checks = newOidcChecks();
    // The attacker's issuer completes a flow with the victim's state and nonce.
    const foreign = await signInAt(second, 'acct-alice');
    const attackerUrl = await oidcAuthorizeUrl(foreign.provider, { redirectUri: REDIRECT_URI, scopes: SCOPES, checks });
    const back = Object.fromEntries((await second.login(attackerUrl, 'acct-alice')).searchParams) as OidcCallbackParams;
    const withIss = await rejected(completeOidcSignIn(first, back, { redirectUri: REDIRECT_URI, checks }));
    expect(withIss).toMatchObject({ kind: 'invalid_request', field: ['query', 'iss'] });
    // Even with `iss` rewritten, the first issuer does not know the code.
    const rewritten = await rejected(completeOidcSignIn(first, { ...back, iss: idp.issuer }, { redirectUri: REDIRECT_URI, checks }));
    expect(rewritten.kind).toBe('oauth_error');
  });

  test('a provider error ends the flow with oauth_error naming its code', async () => {
    const provider = await providerOf(idp);
    const checks = newOidcChecks();
    const back = await idp.deny(await oidcAuthorizeUrl(provider, { redirectUri: REDIRECT_URI, scopes: SCOPES, checks }));
    const err = await rejected(completeOidcSignIn(provider, Object.fromEntries(back.searchParams), { redirectUri: REDIRECT_URI, checks }));
    expect(err.kind).toBe('oauth_error');
    expect(err.message).toMatch(/access_denied/);
  });

  test('another nonce, or another PKCE verifier, is refused', async () => {
    const one = await signInAt(idp, 'acct-alice');
    const nonce = await rejected(completeOidcSignIn(one.provider, one.params, { redirectUri: REDIRECT_URI, checks: { ...one.checks, nonce: 'other' } }));
    expect(nonce.kind).toBe('invalid_token');
    const two = await signInAt(idp, 'acct-alice');
    const verifier = await rejected(
      completeOidcSignIn(two.provider, two.params, { redirectUri: REDIRECT_URI, checks: { ...two.checks, codeVerifier: newOidcChecks().codeVerifier } }),
    );
    expect(verifier.kind).toBe('oauth_error');
  });

  test('a missing code or a state that is not the stored one', async () => {
    const { provider, checks, params } = await signInAt(idp, 'acct-alice');
    const { code: _code, ...noCode } = params;
    expect(await rejected(completeOidcSignIn(provider, noCode, { redirectUri: REDIRECT_URI, checks }))).toMatchObject({ field: ['query', 'code'] });
    expect(await rejected(completeOidcSignIn(provider, { ...params, state: 'x' }, { redirectUri: REDIRECT_URI, checks }))).toMatchObject({
      field: ['query', 'state'],
    });
  });
});
