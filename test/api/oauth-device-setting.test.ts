import { createOrganization } from '../support/factories';
import { insertOrganizationClient } from '../support/oauth-browser';
import { serviceAccountClient, startOAuthApp, type OAuthTestApp } from '../support/oauth';

/**
 * Who may start the device flow (docs/oauth.md#device-flow): organization clients while
 * OAUTH_DEVICE_FLOW is on (the default); a service account never (it acts as itself, for no
 * person); nobody while it is off, when the metadata names no endpoint.
 */
const deviceAuthorization = (t: OAuthTestApp, body: Record<string, string>, auth?: string) =>
  fetch(`${t.base}/oauth/device/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth ? { authorization: auth } : {}) },
    body: new URLSearchParams(body),
  });

describe('OAUTH_DEVICE_FLOW on (the default)', () => {
  let t: OAuthTestApp;
  beforeAll(async () => {
    t = await startOAuthApp();
  });
  afterAll(() => t.close());

  it('publishes the endpoint and the grant; an organization client gets a code, a service account is refused', async () => {
    const metadata = (await t.http.get('/.well-known/oauth-authorization-server')).body;
    expect(metadata.device_authorization_endpoint).toBe(`${t.base}/oauth/device/auth`);
    expect(metadata.grant_types_supported).toContain('urn:ietf:params:oauth:grant-type:device_code');
    const owner = await createOrganization(t);
    const clientId = await insertOrganizationClient(t, owner, { scopes: ['members.read'], redirectUris: ['http://127.0.0.1/cb'] });
    const ok = await deviceAuthorization(t, { client_id: clientId, scope: 'members.read' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ user_code: expect.stringMatching(/^[A-Z]{4}-[A-Z]{4}$/), expires_in: 600, interval: 5 });
    // Asking for more than the client may have is the library's invalid_scope.
    expect(await (await deviceAuthorization(t, { client_id: clientId, scope: 'teams.manage' })).json()).toMatchObject({ error: 'invalid_scope' });
    const sa = await serviceAccountClient(t, owner);
    const refused = await deviceAuthorization(t, { scope: 'members.read' }, `Basic ${Buffer.from(`${sa.id}:${sa.clientSecret}`).toString('base64')}`);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'invalid_request', error_description: expect.stringContaining('device_code is not allowed for this client') });
  });
});

describe('OAUTH_DEVICE_FLOW=off', () => {
  let t: OAuthTestApp;
  beforeAll(async () => {
    t = await startOAuthApp({ env: { OAUTH_DEVICE_FLOW: 'off' } });
  });
  afterAll(() => t.close());

  it('names no endpoint; the path is not found; organization clients still work for the code flow', async () => {
    const metadata = (await t.http.get('/.well-known/oauth-authorization-server')).body;
    expect(metadata.device_authorization_endpoint).toBeUndefined();
    expect(metadata.grant_types_supported).not.toContain('urn:ietf:params:oauth:grant-type:device_code');
    const owner = await createOrganization(t);
    const clientId = await insertOrganizationClient(t, owner, { scopes: ['members.read'], redirectUris: ['http://127.0.0.1/cb'] });
    expect((await deviceAuthorization(t, { client_id: clientId })).status).toBe(404);
    const authorize = await fetch(`${t.base}/oauth/auth?${new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: 'http://127.0.0.1/cb', scope: 'members.read', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`, { redirect: 'manual' });
    expect(authorize.status).toBe(303);
    expect(authorize.headers.get('location')).toMatch(/\/oauth\/interaction\//);
  });
});

describe('guessing user codes', () => {
  let t: OAuthTestApp;
  beforeAll(async () => {
    t = await startOAuthApp({ env: { RATE_LIMIT_SIGN_IN_IP: '2/15m' } });
  });
  afterAll(() => t.close());

  it('wrong codes count as failed sign-ins from the address: once its window is used up the code page answers 429', async () => {
    const cookies = new Map<string, string>();
    let xsrf = '';
    const read = async (res: Response) => {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
      const body = await res.text();
      xsrf = /name="xsrf" value="([^"]*)"/.exec(body)?.[1] ?? '';
      return body;
    };
    const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const post = async (userCode: string) => {
      const res = await fetch(`${t.base}/oauth/device`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() }, body: new URLSearchParams({ xsrf, user_code: userCode }) });
      return { status: res.status, body: await read(res) };
    };
    await read(await fetch(`${t.base}/oauth/device`));
    expect(xsrf).not.toBe('');
    expect(await post('BCDF-GHJK')).toMatchObject({ status: 200, body: expect.stringContaining('This code is not one we issued') });
    expect(await post('BCDF-GHJL')).toMatchObject({ status: 200, body: expect.stringContaining('This code is not one we issued') });
    const limited = await post('BCDF-GHJM');
    expect(limited.status).toBe(429);
    expect(limited.body).toContain('Too many wrong codes came from your network');
  });
});
