import { Secret, TOTP } from 'otpauth';
import * as oauth from 'openid-client';
import type { Browser, Page } from 'puppeteer-core';
import { newId } from '../../src/lib/ids';
import { insertMember } from '../../src/members/store';
import type { TestApp } from '../support/app';
import { startBrowserHarness, type BrowserHarness } from '../support/browser';
import type { ManualClock } from '../support/clock';
import { bearer, createOrganization, signUpAs, type OrgOwner } from '../support/factories';
import { clientConfig, freshPage, insertOrganizationClient, mainText, shoot, signInAs, startRedirectTarget, submit } from '../support/oauth-browser';
import { uniqueDomain, verifyDomain } from '../support/sso-signin';

/**
 * The sign-in rules on the hosted OAuth pages (docs/oauth.md#sign-in-and-consent-authorization-code), each
 * as a person meets them in Chromium (headless): a second factor asked for and typed from an
 * authenticator (codes from `otpauth`, independent of the service's TOTP library), an address
 * not yet confirmed, an organization that enforces SSO for the address's domain, and forms posted
 * without their CSRF token or with a forged one — each a page that says what happened, never a 500.
 */
let harness: BrowserHarness;
let t: TestApp;
let clock: ManualClock;
let browser: Browser;
let origin: string;
let target: Awaited<ReturnType<typeof startRedirectTarget>>;
let redirectUri: string;

beforeAll(async () => {
  harness = await startBrowserHarness('127.0.0.1');
  ({ t, origin, browser } = harness);
  clock = t.clock as ManualClock;
  target = await startRedirectTarget();
  redirectUri = target.redirectUri;
});
afterAll(async () => {
  await target?.close();
  await harness?.close();
});

const codeAt = (secret: string, at = clock.now()) => new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: at.getTime() });

/** Opens the authorization URL of an unmodified client (PKCE S256) in a fresh browser context. */
async function authorize(owner: OrgOwner): Promise<{ page: Page; config: oauth.Configuration; verifier: string; state: string }> {
  const clientId = await insertOrganizationClient(t, owner, { scopes: ['members.read'], redirectUris: [redirectUri] });
  const config = await clientConfig(origin, clientId);
  const verifier = oauth.randomPKCECodeVerifier();
  const state = oauth.randomState();
  const url = oauth.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'members.read', state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
  const page = await freshPage(browser);
  await page.goto(url.href);
  return { page, config, verifier, state };
}

describe('sign-in rules on the hosted pages', () => {
  it('a second factor: the page asks for the code, refuses a wrong one, and the right one from the authenticator lets the person on', async () => {
    const owner = await createOrganization(t, 'Two Steps');
    // The organization requires a second factor: offered here only because the sign-in proved one.
    await t.db.insertInto('organization_auth_policies').values({ organization_id: owner.organizationId, require_mfa: true, updated_at: clock.now() }).execute();
    const enrol = await t.http.post('/v1/me/mfa/totp').set(...bearer(owner.token));
    const secret: string = enrol.body.secret;
    expect((await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(owner.token)).send({ code: codeAt(secret) })).status).toBe(200);
    clock.advance(30_000);

    const { page, config, verifier, state } = await authorize(owner);
    await signInAs(page, owner.email);
    expect(await mainText(page)).toContain('Enter the 6-digit code of your authenticator app');
    expect(await page.$eval('label[for=code]', (l) => (l as unknown as { innerText: string }).innerText)).toBe('Code');
    await shoot(page, 'oauth-second-factor');
    const wrong = String((Number(codeAt(secret)) + 1) % 1_000_000).padStart(6, '0');
    await page.type('#code', wrong);
    const refused = await submit(page);
    expect(refused!.status()).toBe(401);
    expect(await mainText(page)).toMatch(/incorrect/i);
    await shoot(page, 'oauth-second-factor-wrong');
    await page.type('#code', codeAt(secret));
    await submit(page);
    expect(await mainText(page)).toContain('Two Steps');
    await submit(page, 'button[value=approve]');
    const back = new URL(page.url());
    await page.close();
    const tokens = await oauth.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state });
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);
  }, 60_000);

  it('an address not yet confirmed: the password is right, and the page says to confirm the address first', async () => {
    const owner = await createOrganization(t, 'Unconfirmed');
    await t.db.updateTable('users').set({ email_verified_at: null }).where('id', '=', owner.userId).execute();
    const { page } = await authorize(owner);
    const answer = await signInAs(page, owner.email);
    await shoot(page, 'oauth-email-unverified');
    expect(answer!.status()).toBe(403);
    expect(await mainText(page)).toContain('Confirm your e-mail address first');
    expect(await page.$('button[value=approve]')).toBeNull();
    await page.close();
  }, 60_000);

  it('an organization enforcing SSO for the address: no password sign-in here, said in words a person can act on', async () => {
    const owner = await createOrganization(t, 'Enforcers');
    const domain = uniqueDomain();
    const member = await signUpAs(t, `dev@${domain}`, 'Dev');
    await insertMember(t.db, { id: newId('member'), organizationId: owner.organizationId, userId: member.userId, role: 'member', now: clock.now() });
    await verifyDomain(t, owner.organizationId, domain);
    await t.db.updateTable('organizations').set({ sso_enforced: true }).where('id', '=', owner.organizationId).execute();
    const { page } = await authorize(owner);
    const answer = await signInAs(page, member.email);
    await shoot(page, 'oauth-sso-enforced');
    expect(answer!.status()).toBe(403);
    const text = await mainText(page);
    expect(text).toContain('requires single sign-on');
    expect(text).not.toContain('/v1/');
    expect(await page.$('#email')).not.toBeNull();
    await page.close();
  }, 60_000);
});

describe('CSRF on the hosted pages', () => {
  it('a sign-in form with a forged token, or posted from elsewhere without one, gets a refusal page (400), not a 500', async () => {
    const owner = await createOrganization(t, 'Forged');
    const { page } = await authorize(owner);
    await page.waitForSelector('input[name=csrf]');
    const action = await page.$eval('form', (f) => (f as unknown as { action: string }).action);
    await page.$eval('input[name=csrf]', (i) => ((i as unknown as { value: string }).value = 'forged'));
    const refused = await signInAs(page, owner.email);
    expect(refused!.status()).toBe(400);
    expect(refused!.headers()['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(await mainText(page)).toContain('The form expired. Go back to the application and start again.');
    await shoot(page, 'oauth-csrf-refused');
    await page.close();

    // Another site's form: no interaction cookie comes with it, and no token.
    const res = await fetch(action, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ email: owner.email, password: 'x' }) });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('The form expired');
  }, 60_000);
});
