import type { Browser } from 'puppeteer-core';
import type { TestApp } from '../support/app';
import { startBrowserHarness, type BrowserHarness } from '../support/browser';
import { PASSWORD, signUp } from '../support/factories';

/**
 * A passkey registered and used through the service by a real browser: Debian's Chromium,
 * headless, with its DevTools virtual authenticator (CTAP2, internal transport), calling
 * navigator.credentials.create/get on the service's own origin. Nothing of ours signs here.
 */
/** The browser globals the page code uses (the project compiles without the DOM library). */
interface BrowserCredential {
  toJSON(): unknown;
}
interface BrowserGlobals {
  navigator: { credentials: { create(options: unknown): Promise<BrowserCredential>; get(options: unknown): Promise<BrowserCredential> } };
  PublicKeyCredential: { parseCreationOptionsFromJSON(json: unknown): unknown; parseRequestOptionsFromJSON(json: unknown): unknown };
}

let t: TestApp;
let harness: BrowserHarness;
let browser: Browser;
let origin: string;

beforeAll(async () => {
  // A WebAuthn relying party id is a domain: the origin is localhost.
  harness = await startBrowserHarness('localhost');
  ({ t, origin, browser } = harness);
});
afterAll(() => harness?.close());

it('registers a passkey with navigator.credentials.create and signs in with navigator.credentials.get', async () => {
  const user = await signUp(t, 'chromium');
  const page = await browser.newPage();
  const cdp = await page.createCDPSession();
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  await page.goto(`${origin}/health`);

  const registered = await page.evaluate(async (token: string) => {
    const w = globalThis as unknown as BrowserGlobals;
    const options = await (await fetch('/v1/me/passkeys/options', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).json();
    const credential = await w.navigator.credentials.create({ publicKey: w.PublicKeyCredential.parseCreationOptionsFromJSON(options) });
    const res = await fetch('/v1/me/passkeys', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Chromium', response: credential.toJSON() }),
    });
    return { status: res.status, body: await res.json() };
  }, user.token);
  expect(registered.status).toBe(201);
  expect(registered.body.item.name).toBe('Chromium');

  const signedIn = await page.evaluate(
    async (email: string, password: string) => {
      const w = globalThis as unknown as BrowserGlobals;
      const post = (path: string, body: unknown) => fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
      const first = await post('/v1/auth/sign-in', { email, password });
      const options = await post('/v1/auth/mfa/passkey-options', { challengeToken: first.challenge.token });
      const assertion = await w.navigator.credentials.get({ publicKey: w.PublicKeyCredential.parseRequestOptionsFromJSON(options) });
      const res = await fetch('/v1/auth/mfa/verify', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ challengeToken: first.challenge.token, method: 'passkey', response: assertion.toJSON() }),
      });
      return { first, status: res.status, body: await res.json() };
    },
    user.email,
    PASSWORD,
  );
  expect(signedIn.first).toMatchObject({ mfaRequired: true, challenge: { methods: ['passkey'] } });
  expect(signedIn.status).toBe(200);
  expect(signedIn.body.session.token).toMatch(/^cps_/);
  const stored = await t.db.selectFrom('passkeys').select(['counter', 'last_used_at']).where('user_id', '=', user.userId).executeTakeFirstOrThrow();
  expect(stored.last_used_at).not.toBeNull();
});
