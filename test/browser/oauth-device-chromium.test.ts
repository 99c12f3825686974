import * as oauth from 'openid-client';
import type { Browser } from 'puppeteer-core';
import { systemClock } from '../../src/lib/clock';
import { SecretBox } from '../../src/lib/crypto';
import { keyOf } from '../../src/oauth/records';
import { TEST_SECRET_KEY, type TestApp } from '../support/app';
import { startBrowserHarness, type BrowserHarness } from '../support/browser';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { claimsOf, clientConfig, freshPage, insertOrganizationClient, mainText, shoot, signInAs, submit } from '../support/oauth-browser';

/**
 * The device flow (RFC 8628; docs/oauth.md#device-flow) as a device and a person go through it: an
 * unmodified standard client (openid-client) asks for a code and polls the token endpoint while
 * Debian's Chromium (headless), as the person, opens the verification page, enters the code, checks
 * it, signs in, picks the organization and approves. The service runs on the system clock here: the
 * client's polling is timed in real seconds, and `slow_down` compares them.
 */
let harness: BrowserHarness;
let t: TestApp;
let browser: Browser;
let origin: string;
const CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

beforeAll(async () => {
  harness = await startBrowserHarness('127.0.0.1', {}, systemClock);
  ({ t, origin, browser } = harness);
});
afterAll(async () => {
  await harness?.close();
});

const deviceClient = (owner: OrgOwner, scopes: string[]) => insertOrganizationClient(t, owner, { scopes, redirectUris: ['http://127.0.0.1/cb'], name: 'Deploy <cli>' });

async function tokenPoll(clientId: string, deviceCode: string) {
  const res = await fetch(`${origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: deviceCode, client_id: clientId }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('device authorization grant through our pages', () => {
  it('the device polls while the person enters the code, checks it, signs in and approves; its token acts for the member and ends with the authorization', async () => {
    const owner = await createOrganization(t, 'Acme <Devices>');
    const clientId = await deviceClient(owner, ['members.read', 'offline_access']);
    const config = await clientConfig(origin, clientId);
    expect(config.serverMetadata().device_authorization_endpoint).toBe(`${origin}/oauth/device/auth`);
    const device = await oauth.initiateDeviceAuthorization(config, { scope: 'members.read offline_access', resource: `${origin}/v1` });
    expect(device).toMatchObject({ verification_uri: `${origin}/oauth/device`, expires_in: 600, interval: 5 });
    expect(device.user_code).toMatch(CODE);
    expect(device.verification_uri_complete).toBe(`${origin}/oauth/device?user_code=${device.user_code}`);
    const polling = oauth.pollDeviceAuthorizationGrant(config, device, { resource: `${origin}/v1` });

    const page = await freshPage(browser);
    const first = await page.goto(device.verification_uri);
    expect(first!.headers()['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(await page.$eval('label[for=user_code]', (l) => (l as unknown as { innerText: string }).innerText)).toBe('Code');
    await shoot(page, 'device-code');
    // A mistyped code: the page says so and keeps what was typed.
    await page.type('#user_code', 'BCDF-GHJK');
    const wrong = await submit(page);
    expect(wrong!.status()).toBe(200);
    expect(await mainText(page)).toContain('This code is not one we issued');
    await shoot(page, 'device-code-wrong');
    await page.$eval('#user_code', (i) => ((i as unknown as { value: string }).value = ''));
    await page.type('#user_code', device.user_code.toLowerCase());
    await submit(page);
    await shoot(page, 'device-confirm');
    const confirm = await mainText(page);
    expect(confirm).toContain('Deploy <cli> asks to connect with the code');
    expect(confirm).toContain(device.user_code);
    expect(confirm).toContain('Registered by Acme <Devices>');
    await submit(page, 'button[value=yes][name=confirm]');
    await signInAs(page, owner.email);
    await shoot(page, 'device-consent');
    const consent = await mainText(page);
    expect(consent).toContain('Deploy <cli> wants to act for you');
    expect(consent).toContain(`It will act from the device that shows the code ${device.user_code}`);
    expect(consent).toContain('Keep access while you are away');
    await submit(page, 'button[value=approve]');
    await shoot(page, 'device-success');
    expect(await mainText(page)).toContain('Deploy <cli> can now act for you from your device');
    await page.close();

    const tokens = await polling;
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const [authorization] = (await t.http.get('/v1/me/authorizations').set(...bearer(owner.token))).body.items;
    expect(authorization).toMatchObject({ client: { id: clientId, name: 'Deploy <cli>', type: 'organization' }, organizationId: owner.organizationId, memberId: owner.memberId, scopes: ['members.read', 'offline_access'] });
    expect(claimsOf(tokens.access_token)).toMatchObject({ sub: owner.memberId, org_id: owner.organizationId, authorization_id: authorization.id, client_id: clientId, scope: 'members.read', aud: `${origin}/v1` });
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);

    // The code is good once: entering it again is refused on the page.
    const again = await freshPage(browser);
    await again.goto(device.verification_uri_complete!);
    expect(await again.$eval('#user_code', (i) => (i as unknown as { value: string }).value)).toBe(device.user_code);
    await submit(again);
    expect(await mainText(again)).toContain('This code was already used');
    await again.close();

    // Revoking the authorization ends the device's tokens on the next request.
    expect((await t.http.delete(`/v1/me/authorizations/${authorization.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!, { resource: `${origin}/v1` })).rejects.toMatchObject({ error: 'invalid_grant' });
  }, 90_000);

  it('polling: authorization_pending, then slow_down for a device polling faster than its interval (the interval growing by 5 s each time)', async () => {
    const owner = await createOrganization(t, 'Pollers');
    const clientId = await deviceClient(owner, ['members.read']);
    const device = await oauth.initiateDeviceAuthorization(await clientConfig(origin, clientId), { scope: 'members.read' });
    expect(await tokenPoll(clientId, device.device_code)).toMatchObject({ status: 400, body: { error: 'authorization_pending' } });
    expect(await tokenPoll(clientId, device.device_code)).toMatchObject({ status: 400, body: { error: 'slow_down' } });
    const row = await t.db.selectFrom('oauth_records').select(['poll_interval']).where('id', '=', keyOf('DeviceCode', device.device_code)).executeTakeFirstOrThrow();
    expect(row.poll_interval).toBe(10);
    expect(await tokenPoll(clientId, device.device_code)).toMatchObject({ status: 400, body: { error: 'slow_down' } });
    expect(await tokenPoll(clientId, 'not-a-device-code')).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('cancelling on the check page answers access_denied to the device; an expired code is refused on the page and answered expired_token', async () => {
    const owner = await createOrganization(t, 'Cancellers');
    const clientId = await deviceClient(owner, ['members.read']);
    const config = await clientConfig(origin, clientId);
    const device = await oauth.initiateDeviceAuthorization(config, { scope: 'members.read' });
    const page = await freshPage(browser);
    await page.goto(device.verification_uri_complete!);
    await submit(page);
    await submit(page, 'button[name=abort]');
    expect(await mainText(page)).toContain('The request was cancelled; the device gets no access');
    await page.close();
    expect(await tokenPoll(clientId, device.device_code)).toMatchObject({ status: 400, body: { error: 'access_denied' } });

    // A code past its ten minutes (its sealed record aged here, as the library reads its expiry from it).
    const late = await oauth.initiateDeviceAuthorization(config, { scope: 'members.read' });
    const secrets = new SecretBox(TEST_SECRET_KEY);
    const id = keyOf('DeviceCode', late.device_code);
    const row = await t.db.selectFrom('oauth_records').select('payload_sealed').where('id', '=', id).executeTakeFirstOrThrow();
    const payload = JSON.parse(secrets.decrypt(row.payload_sealed)) as { exp: number; iat: number };
    await t.db.updateTable('oauth_records').set({ payload_sealed: secrets.encrypt(JSON.stringify({ ...payload, iat: payload.iat - 700, exp: payload.exp - 700 })) }).where('id', '=', id).execute();
    const expired = await freshPage(browser);
    await expired.goto(late.verification_uri);
    await expired.type('#user_code', late.user_code);
    await submit(expired);
    expect(await mainText(expired)).toContain('This code has expired');
    await expired.close();
    expect(await tokenPoll(clientId, late.device_code)).toMatchObject({ status: 400, body: { error: 'expired_token' } });
  }, 60_000);

  it('a code form posted without its form token, or with a wrong one, gets a refusal page (400), not the confirmation', async () => {
    const owner = await createOrganization(t, 'Forgers');
    const clientId = await deviceClient(owner, ['members.read']);
    const device = await oauth.initiateDeviceAuthorization(await clientConfig(origin, clientId), { scope: 'members.read' });
    // Another site's form: no session cookie comes with it (SameSite), and no token it could know.
    const res = await fetch(`${origin}/oauth/device`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ user_code: device.user_code, xsrf: 'forged', confirm: 'yes' }) });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(await res.text()).toContain('The form expired. Enter the code again.');

    // The person's own browser with a tampered token: refused, and the page's new form works.
    const page = await freshPage(browser);
    await page.goto(device.verification_uri_complete!);
    await page.$eval('input[name=xsrf]', (i) => ((i as unknown as { value: string }).value = 'forged'));
    const refused = await submit(page);
    expect(refused!.status()).toBe(400);
    expect(await mainText(page)).toContain('The form expired. Enter the code again.');
    await shoot(page, 'device-code-forged');
    await submit(page);
    expect(await mainText(page)).toContain('asks to connect with the code');
    await page.close();
    expect(await tokenPoll(clientId, device.device_code)).toMatchObject({ body: { error: 'authorization_pending' } });
  }, 60_000);
});
