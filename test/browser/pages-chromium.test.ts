import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import type { TestApp } from '../support/app';
import { startBrowserHarness, type BrowserHarness } from '../support/browser';
import { bearer, createOrganization, PASSWORD, uniqueEmail } from '../support/factories';
import { INVITATION_SUBJECT, linkIn, mailEnv, startMailbox, testMailer, type Mailbox } from '../support/mailbox';

/**
 * The pages the links in messages open (docs/mail.md#the-pages-links-open), used as a person would: the
 * message arrives at a real SMTP server, Debian's Chromium (headless) opens its link, the form is
 * filled in and submitted, and the outcome is checked through the API. Screenshots of each page,
 * before and after submitting, are written to PAGE_SHOTS_DIR (default: a folder in the temp dir).
 */
let mailbox: Mailbox;
let t: TestApp;
let harness: BrowserHarness;
let browser: Browser;
let origin: string;
const shots = process.env.PAGE_SHOTS_DIR ?? path.join(tmpdir(), 'cp-page-shots');

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  mailbox = await startMailbox();
  harness = await startBrowserHarness('127.0.0.1', mailEnv(mailbox));
  ({ t, origin, browser } = harness);
});
afterAll(async () => {
  await harness?.close();
  await mailbox?.close();
});

/** Runs the service's mail sender until the first message to `to` matching `subject` arrives. */
async function receive(to: string, subject: RegExp) {
  const mailer = testMailer(t);
  mailer.start();
  try {
    return await mailbox.waitFor(to, { subject });
  } finally {
    await mailer.stop();
  }
}

async function shoot(page: Page, name: string) {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

async function text(page: Page): Promise<string> {
  return page.$eval('main', (m) => (m as unknown as { innerText: string }).innerText);
}

async function submit(page: Page) {
  const [response] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  return response!;
}

describe('accept-invitation', () => {
  it('a new person opens the mailed link, creates their account and joins; the link then is dead', async () => {
    const owner = await createOrganization(t, 'Acme <Labs>');
    const email = uniqueEmail('newcomer');
    expect((await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email, role: 'admin' })).status).toBe(201);
    const link = linkIn(await receive(email, INVITATION_SUBJECT), '/accept-invitation');
    expect(link.origin).toBe(origin);

    const page = await browser.newPage();
    const opened = await page.goto(link.href);
    expect(opened!.status()).toBe(200);
    const headers = opened!.headers();
    expect(headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(headers['content-security-policy']).not.toMatch(/unsafe-inline|script-src/);
    expect(headers['referrer-policy']).toBe('no-referrer');
    const text = await page.$eval('main', (m) => (m as unknown as { innerText: string }).innerText);
    // Names are shown as text, never as markup.
    expect(text).toContain('to join Acme <Labs> as admin.');
    expect(await page.$eval('#email', (i) => (i as unknown as { value: string }).value)).toBe(email);
    // The token travels in the form body, not in a URL the page makes.
    expect(await page.$eval('form', (f) => f.getAttribute('action'))).toBe('/accept-invitation');
    expect(await page.$eval('input[name=token]', (i) => i.getAttribute('type'))).toBe('hidden');
    await shoot(page, 'accept-invitation-1-form');

    await page.type('#name', 'Nia Newcomer');
    await page.type('#password', 'short');
    // The browser's own check (minlength) stops a short password; the server's stops a weak one.
    await page.$eval('#password', (i) => i.removeAttribute('minlength'));
    const weak = await submit(page);
    expect(weak.status()).toBe(400);
    expect(await page.$eval('.error', (e) => e.textContent)).toMatch(/8 to 256/);
    expect(await page.$eval('#name', (i) => (i as unknown as { value: string }).value)).toBe('Nia Newcomer');
    await shoot(page, 'accept-invitation-2-error');

    await page.type('#password', PASSWORD);
    const done = await submit(page);
    expect(done.status()).toBe(200);
    expect(page.url()).toBe(`${origin}/accept-invitation`);
    expect(await page.$eval('main', (m) => (m as unknown as { innerText: string }).innerText)).toContain('joined Acme <Labs> as admin');
    await shoot(page, 'accept-invitation-3-done');

    // The account works: sign in with the chosen password; the membership is there.
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD });
    expect(signIn.status).toBe(200);
    const org = await t.http.get('/v1/org').set(...bearer(signIn.body.session.token));
    expect(org.body.organization.id).toBe(owner.organizationId);
    expect(org.body.currentMember).toMatchObject({ role: 'admin', user: { name: 'Nia Newcomer', email } });

    const again = await page.goto(link.href);
    expect(again!.status()).toBe(400);
    expect(await page.$eval('main', (m) => (m as unknown as { innerText: string }).innerText)).toContain('invalid, already used or expired');
    await shoot(page, 'accept-invitation-4-used');
    await page.close();
  });
});

describe('verify-email', () => {
  it('a new user opens the mailed link, confirms their address with one button and chooses a password', async () => {
    const email = uniqueEmail('verifier');
    const signUp = await t.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: 'Vera' });
    expect(signUp.status).toBe(201);
    const session = signUp.body.session.token as string;
    expect((await t.http.get('/v1/me').set(...bearer(session))).body.user.emailVerified).toBe(false);
    const link = linkIn(await receive(email, /Confirm your e-mail address/), '/verify-email');

    const page = await browser.newPage();
    const opened = await page.goto(link.href);
    expect(opened!.status()).toBe(200);
    expect(opened!.headers()['referrer-policy']).toBe('no-referrer');
    expect(await text(page)).toContain(email);
    // Opening the link proves nothing yet (a mail scanner may fetch it): the button does.
    expect((await t.http.get('/v1/me').set(...bearer(session))).body.user.emailVerified).toBe(false);
    await shoot(page, 'verify-email-1-form');

    const done = await submit(page);
    expect(done.status()).toBe(200);
    expect(page.url()).toBe(`${origin}/verify-email`);
    expect(await text(page)).toContain(`${email} is confirmed`);
    await shoot(page, 'verify-email-2-choose-password');
    // Confirmed outside the signing-up session: the password chosen at sign-up and its session are gone.
    expect((await t.http.get('/v1/me').set(...bearer(session))).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD })).status).toBe(401);

    const chosen = 'veras chosen passphrase 7';
    await page.type('#password', chosen);
    const set = await submit(page);
    expect(set.status()).toBe(200);
    expect(await text(page)).toContain('Your new password is set');
    await shoot(page, 'verify-email-3-done');
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email, password: chosen });
    expect(signIn.status).toBe(200);
    expect(signIn.body.user.emailVerified).toBe(true);

    const again = await page.goto(link.href);
    expect(again!.status()).toBe(400);
    await page.close();
  });

  it('a person who did not sign up follows "this wasn\'t me" and the account made with their address is deleted', async () => {
    const email = uniqueEmail('squatted');
    const signUp = await t.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: 'Not them' });
    expect(signUp.status).toBe(201);
    const link = linkIn(await receive(email, /Confirm your e-mail address/), '/not-my-account');

    const page = await browser.newPage();
    expect((await page.goto(link.href))!.status()).toBe(200);
    expect(await text(page)).toContain(email);
    await shoot(page, 'not-my-account-1-form');
    const done = await submit(page);
    expect(done.status()).toBe(200);
    expect(await text(page)).toContain('deleted');
    await shoot(page, 'not-my-account-2-done');
    expect((await t.http.get('/v1/me').set(...bearer(signUp.body.session.token))).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD })).status).toBe(401);
    await page.close();
  });
});

describe('reset-password', () => {
  it('a user who forgot their password opens the mailed link, sets a new one, and signs in with it', async () => {
    const owner = await createOrganization(t, 'Resetters');
    const other = await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: PASSWORD });
    expect((await t.http.post('/v1/auth/password-reset').send({ email: owner.email })).status).toBe(202);
    const link = linkIn(await receive(owner.email, /Reset your/), '/reset-password');

    const page = await browser.newPage();
    const opened = await page.goto(link.href);
    expect(opened!.status()).toBe(200);
    expect(opened!.headers()['content-security-policy']).toMatch(/default-src 'none'/);
    expect(await page.$eval('#email', (i) => (i as unknown as { value: string }).value)).toBe(owner.email);
    await shoot(page, 'reset-password-1-form');

    await page.type('#password', owner.email);
    const refused = await submit(page);
    expect(refused.status()).toBe(400);
    expect(await page.$eval('.error', (e) => e.textContent)).toBeTruthy();
    await shoot(page, 'reset-password-2-error');

    const fresh = 'a brand new passphrase 9';
    await page.type('#password', fresh);
    const done = await submit(page);
    expect(done.status()).toBe(200);
    expect(await text(page)).toContain('Your new password is set');
    await shoot(page, 'reset-password-3-done');

    expect((await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: PASSWORD })).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: fresh })).status).toBe(200);
    // Every session of the account ended.
    expect((await t.http.get('/v1/org').set(...bearer(other.body.session.token))).status).toBe(401);
    expect((await page.goto(link.href))!.status()).toBe(400);
    await page.close();
  });
});

describe('confirm-email-change', () => {
  it('a user who asked to change their address opens the link at the new one and confirms it', async () => {
    const owner = await createOrganization(t, 'Movers');
    const newEmail = uniqueEmail('moved');
    expect((await t.http.post('/v1/me/email').set(...bearer(owner.token)).send({ email: newEmail })).status).toBe(202);
    const link = linkIn(await receive(newEmail, /Confirm your new e-mail address/), '/confirm-email-change');

    const page = await browser.newPage();
    const opened = await page.goto(link.href);
    expect(opened!.status()).toBe(200);
    expect(opened!.headers()['referrer-policy']).toBe('no-referrer');
    expect(await text(page)).toContain(`from ${owner.email} to ${newEmail}`);
    // Opening the link changes nothing yet.
    expect((await t.http.get('/v1/me').set(...bearer(owner.token))).body.user.email).toBe(owner.email);
    await shoot(page, 'confirm-email-change-1-form');

    const done = await submit(page);
    expect(done.status()).toBe(200);
    expect(await text(page)).toContain(`now ${newEmail}`);
    await shoot(page, 'confirm-email-change-2-done');
    expect((await t.http.get('/v1/me').set(...bearer(owner.token))).body.user).toMatchObject({ email: newEmail, emailVerified: true });
    expect((await t.http.post('/v1/auth/sign-in').send({ email: newEmail, password: PASSWORD })).status).toBe(200);
    expect((await page.goto(link.href))!.status()).toBe(400);
    await page.close();
  });
});
