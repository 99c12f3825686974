import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { bearer } from '../support/factories';
import { OidcIdp } from '../fakes/oidc-idp';
import { callback, counts, IDP_CLIENT, idpAccount, loginAt, RETURN_ORIGIN, SSO_ENV, ssoOrganization, type SsoOrg } from '../support/sso-signin';

/**
 * OIDC sign-in refusals through the HTTP API (docs/sso.md#signing-in, docs/egress.md#oauth-callbacks):
 * state forged, reused or expired; `iss` missing or foreign; another issuer's code; provider
 * errors; disabled and unknown connections; returnTo outside SSO_RETURN_ORIGINS. Each is a 4xx in
 * the usual shapes and writes nothing.
 */
let t: TestApp;
let idp: OidcIdp;
let other: OidcIdp;
let org: SsoOrg;

beforeAll(async () => {
  [idp, other] = await Promise.all([OidcIdp.start({ clients: [IDP_CLIENT], accounts: {} }), OidcIdp.start({ clients: [IDP_CLIENT], accounts: {}, claimsInIdToken: true })]);
  t = await createTestApp({ env: { ...LOCAL_FAKES, ...SSO_ENV } });
  org = await ssoOrganization(t, idp);
});
afterAll(async () => {
  await t?.close();
  await Promise.all([idp?.stop(), other?.stop()]);
});

function member(provider = idp): string {
  return idpAccount(provider, { email: `user@${org.domain}`, groups: [] });
}

async function expectNothingWritten(run: () => Promise<void>) {
  const before = await counts(t);
  await run();
  expect(await counts(t)).toEqual(before);
}

test('extra callback parameters are ignored', async () => {
  const back = await loginAt(t, idp, { connectionId: org.connectionId }, member());
  const res = await callback(t, back, (q) => {
    q.set('session_state', 'abc.def');
    q.set('foo', 'bar');
  });
  expect(res.status).toBe(200);
});

test('a forged state, and a state used twice, are 400 invalid_request naming state', async () => {
  const back = await loginAt(t, idp, { connectionId: org.connectionId }, member());
  await expectNothingWritten(async () => {
    const forged = await callback(t, back, (q) => q.set('state', 'forged-state-value'));
    expect(forged.status).toBe(400);
    expect(forged.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['query', 'state'] }] });
  });
  expect((await callback(t, back)).status).toBe(200);
  await expectNothingWritten(async () => {
    const reused = await callback(t, back);
    expect(reused.status).toBe(400);
    expect(reused.body.details[0].path).toEqual(['query', 'state']);
  });
});

test('a callback without iss, or with another issuer, is 400 naming iss', async () => {
  for (const edit of [(q: URLSearchParams) => q.delete('iss'), (q: URLSearchParams) => q.set('iss', other.issuer)]) {
    const back = await loginAt(t, idp, { connectionId: org.connectionId }, member());
    await expectNothingWritten(async () => {
      const res = await callback(t, back, edit);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['query', 'iss'] }] });
      expect(JSON.stringify(res.body)).not.toMatch(/stack|at .*\.js/);
    });
  }
});

test("a second issuer's code is not accepted for the first connection", async () => {
  // The browser starts at the first connection; an attacker's issuer answers with its own code.
  const start = await t.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId });
  const state = new URL(start.body.authorizeUrl).searchParams.get('state')!;
  const foreign = new URL(start.body.authorizeUrl);
  const attackerUrl = new URL(`${other.issuer}/auth`);
  attackerUrl.search = foreign.search;
  const back = await other.login(attackerUrl.href, member(other));
  expect(back.searchParams.get('state')).toBe(state);
  await expectNothingWritten(async () => {
    const res = await callback(t, back);
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toEqual(['query', 'iss']);
  });
  // Even with the first issuer's name put in `iss`, its token endpoint does not know the code.
  const again = await t.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId });
  const url = new URL(`${other.issuer}/auth`);
  url.search = new URL(again.body.authorizeUrl).search;
  const back2 = await other.login(url.href, member(other));
  await expectNothingWritten(async () => {
    const res = await callback(t, back2, (q) => q.set('iss', idp.issuer));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('oauth_error');
  });
});

test('a provider error ends the flow with oauth_error and consumes the state', async () => {
  const start = await t.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId });
  const back = await idp.deny(start.body.authorizeUrl);
  await expectNothingWritten(async () => {
    const res = await callback(t, back);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'oauth_error', message: expect.stringContaining('access_denied') });
    const replay = await callback(t, back);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_request');
  });
  const withReturn = await t.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId, returnTo: `${RETURN_ORIGIN}/cb` });
  const res = await callback(t, await idp.deny(withReturn.body.authorizeUrl));
  expect(res.status).toBe(302);
  expect(new URL(res.headers.location!).searchParams.get('error')).toBe('oauth_error');
});

test('start: unknown or disabled connection and unconfigured domains are 404 sso_not_configured', async () => {
  const second = await ssoOrganization(t, idp);
  const unknown = await t.http.post('/v1/auth/sso/start').send({ connectionId: 'ssc_01jd0000000000000000000000' });
  expect(unknown.status).toBe(404);
  expect(unknown.body.error).toBe('sso_not_configured');
  expect((await t.http.post('/v1/auth/sso/start').send({ email: 'someone@nowhere.test' })).body.error).toBe('sso_not_configured');

  const back = await loginAt(t, idp, { connectionId: second.connectionId }, member());
  const disable = await t.http.patch(`/v1/sso/connections/${second.connectionId}`).set(...bearer(second.owner.token)).send({ enabled: false });
  expect(disable.status).toBe(200);
  for (const body of [{ connectionId: second.connectionId }, { email: `x@${second.domain}` }]) {
    const res = await t.http.post('/v1/auth/sso/start').send(body);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('sso_not_configured');
  }
  // A sign-in started before the connection was disabled does not complete.
  await expectNothingWritten(async () => {
    const res = await callback(t, back);
    expect(res.status).toBe(400);
  });
});

test('returnTo outside SSO_RETURN_ORIGINS is 400 naming returnTo', async () => {
  for (const returnTo of ['https://evil.example.test/cb', 'javascript:alert(1)', `${RETURN_ORIGIN.replace('https', 'http')}/cb`, 'not a url']) {
    const res = await t.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId, returnTo });
    expect(res.status).toBe(400);
    expect(res.body.details[0].path).toEqual(['body', 'returnTo']);
  }
});

test('an exchange code that was never issued is 400 naming code', async () => {
  const res = await t.http.post('/v1/auth/sso/exchange').send({ code: 'cpx_forged', verifier: 'v' });
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'code'] }] });
});

test('start, callback and exchange are rate limited per IP like sign-in', async () => {
  const limited = await createTestApp({ database: t.database, env: { ...LOCAL_FAKES, ...SSO_ENV, RATE_LIMIT_SSO_START_IP: '2/15m', RATE_LIMIT_SSO_IP: '2/15m' } });
  await limited.db.deleteFrom('rate_limits').execute();
  expect((await limited.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId })).status).toBe(200);
  expect((await limited.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId })).status).toBe(200);
  const third = await limited.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId });
  expect(third.status).toBe(429);
  expect(third.headers['retry-after']).toBeDefined();

  // Two failures (a forged state, a forged code), then even a good callback is refused.
  const back = await loginAt(t, idp, { connectionId: org.connectionId }, member());
  expect((await limited.http.get('/v1/auth/sso/oidc/callback?state=forged&code=x')).status).toBe(400);
  expect((await limited.http.post('/v1/auth/sso/exchange').send({ code: 'cpx_forged', verifier: 'v' })).status).toBe(400);
  const refused = await limited.http.get(`/v1/auth/sso/oidc/callback${back.search}`);
  expect(refused.status).toBe(429);
  expect(refused.body.error).toBe('rate_limited');
  expect((await limited.http.post('/v1/auth/sso/exchange').send({ code: 'cpx_other', verifier: 'v' })).status).toBe(429);
  await limited.db.deleteFrom('rate_limits').execute();
});

test('odd callback and ACS inputs are 4xx, never 500', async () => {
  const queries = ['', 'state=', 'code=x', 'state=a&state=b&code=c', 'state[x]=1', 'error=access_denied', `state=${'x'.repeat(5000)}&code=y`, 'iss=%ZZ'];
  for (const query of queries) {
    const res = await t.http.get(`/v1/auth/sso/oidc/callback?${query}`);
    expect([res.status, query]).toEqual([400, query]);
    expect(res.body.error).toBe('invalid_request');
  }
  const forms: [string, string][] = [
    ['application/x-www-form-urlencoded', ''],
    ['application/x-www-form-urlencoded', 'SAMLResponse=not-base64!&RelayState=x'],
    ['application/x-www-form-urlencoded', `SAMLResponse=${Buffer.from('<x/>').toString('base64')}`],
    ['application/json', JSON.stringify({ SAMLResponse: 'x' })],
  ];
  for (const [type, data] of forms) {
    const res = await t.http.post('/v1/auth/sso/saml/acs').set('content-type', type).send(data);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  }
});
