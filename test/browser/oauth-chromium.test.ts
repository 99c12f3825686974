import * as oauth from 'openid-client';
import type { Browser, Page } from 'puppeteer-core';
import type { TestApp } from '../support/app';
import { startBrowserHarness, type BrowserHarness } from '../support/browser';
import { clientConfig, freshPage, insertOrganizationClient, mainText, shoot, signInAs, startRedirectTarget } from '../support/oauth-browser';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';

/**
 * The authorization-code flow (docs/oauth.md#sign-in-and-consent-authorization-code) as an application and a person
 * go through it: an unmodified standard client (openid-client) makes the authorization URL with
 * PKCE S256 and a resource, Debian's Chromium (headless) opens it, the person signs in and
 * approves on our pages, and the client exchanges the code (checking RFC 9207 `iss`). Then the
 * refresh token rotates, a reused one revokes the authorization, and the refusals: PKCE
 * downgrade, an unregistered redirect URI, a mixed-up issuer, a denial. Screenshots of each page
 * go to PAGE_SHOTS_DIR (default: a folder in the temp dir).
 */
let harness: BrowserHarness;
let t: TestApp;
let browser: Browser;
let origin: string;
let target: Awaited<ReturnType<typeof startRedirectTarget>>;
let redirectUri: string;

beforeAll(async () => {
  harness = await startBrowserHarness('127.0.0.1');
  ({ t, origin, browser } = harness);
  target = await startRedirectTarget();
  redirectUri = target.redirectUri;
});
afterAll(async () => {
  await target?.close();
  await harness?.close();
});

const organizationClient = (owner: OrgOwner, scopes: string[], name?: string) => insertOrganizationClient(t, owner, { scopes, redirectUris: [redirectUri], name });
const configFor = (clientId: string) => clientConfig(origin, clientId);
const newPage = () => freshPage(browser);
const text = mainText;

async function start(config: oauth.Configuration, scope: string) {
  const verifier = oauth.randomPKCECodeVerifier();
  const state = oauth.randomState();
  const url = oauth.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    resource: `${origin}/v1`,
  });
  return { url, verifier, state };
}

async function signIn(page: Page, email: string, shot?: string) {
  await page.waitForSelector('input[name=email]');
  if (shot) await shoot(page, shot);
  await signInAs(page, email);
}

async function approve(page: Page) {
  await Promise.all([page.waitForNavigation(), page.click('button[value=approve]')]);
  return new URL(page.url());
}

/** An organization, its client, and a fresh page at the consent step once `signInAs` (by default the owner) signed in. */
async function atConsent(orgName: string, clientScopes: string[], scope: string, signInAs = async (owner: OrgOwner) => owner.email) {
  const owner = await createOrganization(t, orgName);
  const clientId = await organizationClient(owner, clientScopes);
  const config = await configFor(clientId);
  const flow = await start(config, scope);
  const page = await newPage();
  await page.goto(flow.url.href);
  await signIn(page, await signInAs(owner));
  return { owner, config, flow, page };
}

describe('authorization code with PKCE, through our sign-in and consent pages', () => {
  it('a member signs in, sees the client and scopes truthfully, picks the organization and approves; the client gets a token for the API', async () => {
    const owner = await createOrganization(t, 'Acme <Labs>');
    const clientId = await organizationClient(owner, ['members.read', 'teams.read', 'offline_access']);
    const config = await configFor(clientId);
    const flow = await start(config, 'members.read offline_access');

    const page = await newPage();
    const first = await page.goto(flow.url.href);
    expect(first!.headers()['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    await signIn(page, owner.email, 'oauth-sign-in');
    await shoot(page, 'oauth-consent');
    const consent = await text(page);
    expect(consent).toContain('Deploy <bot> wants to act for you');
    expect(consent).toContain('Registered by Acme <Labs>');
    expect(consent).toContain(`It will receive your answer at ${new URL(redirectUri).host}`);
    expect(consent).toContain("List the organization's members and read any member's permissions.");
    expect(consent).toContain('Keep access while you are away');
    expect(consent).not.toContain('teams.read');
    expect(await page.$eval(`label[for="org-${owner.organizationId}"]`, (l) => (l as unknown as { innerText: string }).innerText)).toBe('Acme <Labs>');
    const back = await approve(page);
    await page.close();
    expect(back.searchParams.get('iss')).toBe(origin);

    const tokens = await oauth.authorizationCodeGrant(config, back, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }, { resource: `${origin}/v1` });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    // offline_access is the grant's (a refresh token), not the access token's.
    expect(tokens.scope).toBe('members.read');
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(200);
    // Not granted, though the client may ask for it.
    expect((await t.http.get('/v1/teams/none').set(...bearer(tokens.access_token))).status).not.toBe(200);

    const mine = await t.http.get('/v1/me/authorizations').set(...bearer(owner.token));
    expect(mine.body.items).toEqual([expect.objectContaining({ client: { id: clientId, name: 'Deploy <bot>', type: 'organization' }, organizationId: owner.organizationId, memberId: owner.memberId })]);

    // Refresh rotates; presenting the rotated token again revokes the whole authorization.
    const refreshed = await oauth.refreshTokenGrant(config, tokens.refresh_token!, { resource: `${origin}/v1` });
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await t.http.get('/v1/members').set(...bearer(refreshed.access_token))).status).toBe(200);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!, { resource: `${origin}/v1` })).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await t.http.get('/v1/members').set(...bearer(refreshed.access_token))).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, refreshed.refresh_token!, { resource: `${origin}/v1` })).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await t.http.get('/v1/me/authorizations').set(...bearer(owner.token))).body.items).toEqual([]);
  }, 60_000);

  it('the member revokes the authorization from their list: its tokens stop on the next request', async () => {
    const { owner, config, flow, page } = await atConsent('Revokers', ['members.read', 'offline_access'], 'members.read offline_access');
    const back = await approve(page);
    await page.close();
    const tokens = await oauth.authorizationCodeGrant(config, back, { pkceCodeVerifier: flow.verifier, expectedState: flow.state }, { resource: `${origin}/v1` });
    const [authorization] = (await t.http.get('/v1/me/authorizations').set(...bearer(owner.token))).body.items;
    expect((await t.http.delete(`/v1/me/authorizations/${authorization.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.get('/v1/members').set(...bearer(tokens.access_token))).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!, { resource: `${origin}/v1` })).rejects.toMatchObject({ error: 'invalid_grant' });
  }, 60_000);

  it('a mixed-up issuer in the answer is refused by the client (RFC 9207); a code without its verifier is refused', async () => {
    const { config, flow, page } = await atConsent('Mixup', ['members.read'], 'members.read');
    const back = await approve(page);
    await page.close();
    const forged = new URL(back);
    forged.searchParams.set('iss', 'https://attacker.example');
    await expect(oauth.authorizationCodeGrant(config, forged, { pkceCodeVerifier: flow.verifier, expectedState: flow.state })).rejects.toMatchObject({ cause: { message: expect.stringMatching(/"iss"/) } });
    // Without iss the client refuses too: the server says it always sends it.
    const stripped = new URL(back);
    stripped.searchParams.delete('iss');
    await expect(oauth.authorizationCodeGrant(config, stripped, { pkceCodeVerifier: flow.verifier, expectedState: flow.state })).rejects.toMatchObject({ cause: { message: expect.stringMatching(/"iss"/) } });
    // A wrong verifier (a stolen code without its verifier) is invalid_grant.
    await expect(oauth.authorizationCodeGrant(config, back, { pkceCodeVerifier: oauth.randomPKCECodeVerifier(), expectedState: flow.state })).rejects.toMatchObject({ error: 'invalid_grant' });
  }, 60_000);

  it('denying answers access_denied to the client', async () => {
    const { config, flow, page } = await atConsent('Deniers', ['members.read'], 'members.read');
    await Promise.all([page.waitForNavigation(), page.click('button[value=deny]')]);
    const back = new URL(page.url());
    await page.close();
    expect(back.searchParams.get('error')).toBe('access_denied');
    await expect(oauth.authorizationCodeGrant(config, back, { pkceCodeVerifier: flow.verifier, expectedState: flow.state })).rejects.toMatchObject({ error: 'access_denied' });
  }, 60_000);

  it("offers only the client's own organization, and explains an organization whose rules refuse the sign-in", async () => {
    const { page } = await atConsent('Strict', ['members.read'], 'members.read', async (owner) => {
      const member = await addMember(t, owner.organizationId, 'member');
      await t.db.insertInto('organization_auth_policies').values({ organization_id: owner.organizationId, require_mfa: true, updated_at: t.clock.now() }).execute();
      return member.email;
    });
    await shoot(page, 'oauth-consent-refused');
    const body = await text(page);
    expect(body).toContain('None of your organizations can authorize this application');
    expect(body).toContain('Strict (It requires a second factor, and you signed in without one.)');
    expect(await page.$('button[value=approve]')).toBeNull();
    await page.close();
  }, 60_000);
});

describe('refusals before any page', () => {
  it('PKCE is required and S256 only: plain and a missing challenge are refused', async () => {
    const owner = await createOrganization(t, 'Pkce');
    const clientId = await organizationClient(owner, ['members.read']);
    const base = { client_id: clientId, response_type: 'code', redirect_uri: redirectUri, scope: 'members.read', state: 'xyz' };
    const plain = await fetch(`${origin}/oauth/auth?${new URLSearchParams({ ...base, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' })}`, { redirect: 'manual' });
    const plainAnswer = new URL(plain.headers.get('location') ?? 'http://none/');
    expect(plainAnswer.searchParams.get('error')).toBe('invalid_request');
    const none = await fetch(`${origin}/oauth/auth?${new URLSearchParams(base)}`, { redirect: 'manual' });
    expect(new URL(none.headers.get('location') ?? 'http://none/').searchParams.get('error')).toBe('invalid_request');
  });

  it('an unregistered redirect URI is answered here, never redirected to', async () => {
    const owner = await createOrganization(t, 'Redirects');
    const clientId = await organizationClient(owner, ['members.read']);
    const config = await configFor(clientId);
    const url = oauth.buildAuthorizationUrl(config, { redirect_uri: 'https://attacker.example/cb', scope: 'members.read', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.json()).toMatchObject({ error: 'invalid_redirect_uri' });
  });
});
