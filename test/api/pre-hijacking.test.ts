import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { bearer } from '../support/factories';
import { linkIn, mailEnv, startMailbox, testMailer, tokenIn, type Mailbox } from '../support/mailbox';
import { OidcIdp } from '../fakes/oidc-idp';
import { callback, IDP_CLIENT, idpAccount, loginAt, SSO_ENV, ssoOrganization } from '../support/sso-signin';
import type { JobRunner } from '../../src/jobs';

/**
 * Account pre-hijacking by one click (docs/people-and-roles.md, "Proving an address"), played over
 * HTTP as the attacker and the victim would: the attacker signs up the victim's work address with
 * a password of their own; the victim gets the real verification message (a real SMTP server),
 * opens its link and presses the page's button; later the victim signs in through the
 * organization's identity provider (oidc-provider) for the first time. The click proves the
 * mailbox, not the attacker's password: it must leave the attacker nothing. A confirmation made
 * with the signing-up session (a client application's own page) keeps the account as it is, and
 * the message's "this wasn't me" link deletes the unverified account.
 */
let mailbox: Mailbox;
let idp: OidcIdp;
let t: TestApp;
let mailer: JobRunner;

beforeAll(async () => {
  mailbox = await startMailbox();
  idp = await OidcIdp.start({ clients: [IDP_CLIENT], accounts: {} });
  t = await createTestApp({ env: { ...LOCAL_FAKES, ...SSO_ENV, ...mailEnv(mailbox) } });
  mailer = testMailer(t);
  mailer.start();
});
afterAll(async () => {
  await mailer?.stop();
  await t?.close();
  await idp?.stop();
  await mailbox?.close();
});

const ATTACKER_PASSWORD = 'the attackers own passphrase';
const VERIFY = /Confirm your e-mail address/;

/** A link of a message as the victim's browser opens it: its path and query, against the app. */
function open(url: URL) {
  return t.http.get(`${url.pathname}${url.search}`);
}

/** Submits a page's form the way a browser does (urlencoded, to the form's action). */
function submit(action: string, fields: Record<string, string>) {
  return t.http.post(action).type('form').send(fields);
}

/** The hidden token of the page's first form posting to `action`. */
function hiddenToken(html: string, action: string): string {
  const form = html.slice(html.indexOf(`action="${action}"`));
  const match = /name="token" value="([^"]+)"/.exec(form);
  if (!match) throw new Error(`no token field in the ${action} form`);
  return match[1]!;
}

async function attackerSignsUp(email: string) {
  const up = await t.http.post('/v1/auth/sign-up').send({ email, password: ATTACKER_PASSWORD, name: 'Not the victim' });
  expect(up.status).toBe(201);
  return { userId: up.body.user.id as string, session: up.body.session.token as string };
}

describe('pre-hijacking by one click', () => {
  it('the victim confirming from the mail leaves the attacker nothing, before and after the victim\'s first SSO sign-in', async () => {
    const acme = await ssoOrganization(t, idp);
    const victimEmail = `victim@${acme.domain}`;
    const attacker = await attackerSignsUp(victimEmail);

    // The victim reads the real message and follows "Confirm my address"; the page's button posts the form.
    const message = await mailbox.waitFor(victimEmail, { subject: VERIFY });
    const page = await open(linkIn(message, '/verify-email'));
    expect(page.status).toBe(200);
    const confirmed = await submit('/verify-email', { token: hiddenToken(page.text, '/verify-email') });
    expect(confirmed.status).toBe(200);
    expect(confirmed.text).toContain('is confirmed');

    // The attacker's session and password are dead at once.
    expect((await t.http.get('/v1/me').set(...bearer(attacker.session))).status).toBe(401);
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email: victimEmail, password: ATTACKER_PASSWORD });
    expect(signIn.status).toBe(401);
    expect(signIn.body.error).toBe('invalid_credentials');

    // The victim's first SSO sign-in links the (now verified, password-less) account...
    const res = await callback(t, await loginAt(t, idp, { connectionId: acme.connectionId }, idpAccount(idp, { email: victimEmail, name: 'Victim' })));
    expect(res.status).toBe(200);
    expect(res.body.user).toMatchObject({ id: attacker.userId, email: victimEmail, emailVerified: true });
    const victim = res.body.session.token as string;
    expect((await t.http.get('/v1/org').set(...bearer(victim))).body.organization.id).toBe(acme.owner.organizationId);

    // ...and hands the attacker nothing: no session reaches it, the password still fails, and the
    // attacker's old session cannot be switched into the organization.
    expect((await t.http.post('/v1/me/active-organization').set(...bearer(attacker.session)).send({ organizationId: acme.owner.organizationId })).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: victimEmail, password: ATTACKER_PASSWORD })).status).toBe(401);
    const live = await t.db.selectFrom('sessions').select('id').where('user_id', '=', attacker.userId).where('revoked_at', 'is', null).execute();
    expect(live).toHaveLength(1);
  });

  it('the page offers a password right after such a confirmation, and the account is the victim\'s with it', async () => {
    const acme = await ssoOrganization(t, idp);
    const email = `ana@${acme.domain}`;
    const attacker = await attackerSignsUp(email);
    const page = await open(linkIn(await mailbox.waitFor(email, { subject: VERIFY }), '/verify-email'));
    const confirmed = await submit('/verify-email', { token: hiddenToken(page.text, '/verify-email') });
    expect(confirmed.text).toContain('Choose a password');
    const chosen = await submit('/reset-password', { token: hiddenToken(confirmed.text, '/reset-password'), password: 'the real owners passphrase' });
    expect(chosen.status).toBe(200);
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: 'the real owners passphrase' })).status).toBe(200);
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: ATTACKER_PASSWORD })).status).toBe(401);
    expect((await t.http.get('/v1/me').set(...bearer(attacker.session))).status).toBe(401);
  });

  it('through the API without a session: the same, and the link to choose a password is mailed', async () => {
    const acme = await ssoOrganization(t, idp);
    const email = `bo@${acme.domain}`;
    const attacker = await attackerSignsUp(email);
    const token = tokenIn(await mailbox.waitFor(email, { subject: VERIFY }), '/verify-email');
    const res = await t.http.post('/v1/auth/verify-email').send({ token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, user: { email, emailVerified: true }, passwordResetRequired: true });
    expect((await t.http.get('/v1/me').set(...bearer(attacker.session))).status).toBe(401);
    const choose = await mailbox.waitFor(email, { subject: /Choose your .* password/ });
    const reset = await t.http.post('/v1/auth/password-reset/confirm').send({ token: tokenIn(choose, '/reset-password'), password: 'bos own passphrase' });
    expect(reset.status).toBe(200);
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: 'bos own passphrase' })).status).toBe(200);
  });

  it('a confirmation with the signing-up session keeps the account as it is', async () => {
    const acme = await ssoOrganization(t, idp);
    const email = `cy@${acme.domain}`;
    const own = await attackerSignsUp(email);
    const token = tokenIn(await mailbox.waitFor(email, { subject: VERIFY }), '/verify-email');
    const res = await t.http.post('/v1/auth/verify-email').set(...bearer(own.session)).send({ token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ user: { emailVerified: true }, passwordResetRequired: false });
    expect((await t.http.get('/v1/me').set(...bearer(own.session))).status).toBe(200);
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: ATTACKER_PASSWORD })).status).toBe(200);
    // Another account's session is not the account's: it is a confirmation from outside.
    const other = await attackerSignsUp(`dee@${acme.domain}`);
    const otherToken = tokenIn(await mailbox.waitFor(`dee@${acme.domain}`, { subject: VERIFY }), '/verify-email');
    const outside = await t.http.post('/v1/auth/verify-email').set(...bearer(own.session)).send({ token: otherToken });
    expect(outside.body.passwordResetRequired).toBe(true);
    expect((await t.http.get('/v1/me').set(...bearer(other.session))).status).toBe(401);
  });

  it('"this wasn\'t me" deletes the unverified account: the attacker\'s session dies and the address is free', async () => {
    const acme = await ssoOrganization(t, idp);
    const email = `eve@${acme.domain}`;
    const attacker = await attackerSignsUp(email);
    const message = await mailbox.waitFor(email, { subject: VERIFY });
    const page = await open(linkIn(message, '/not-my-account'));
    expect(page.status).toBe(200);
    expect(page.text).toContain(email);
    const declined = await submit('/not-my-account', { token: hiddenToken(page.text, '/not-my-account') });
    expect(declined.status).toBe(200);
    expect(declined.text).toContain('Account deleted');
    expect((await t.http.get('/v1/me').set(...bearer(attacker.session))).status).toBe(401);
    expect(await t.db.selectFrom('users').select('id').where('id', '=', attacker.userId).executeTakeFirst()).toBeUndefined();
    // The link is used; the address can be signed up by its owner.
    expect((await submit('/not-my-account', { token: hiddenToken(page.text, '/not-my-account') })).status).toBe(400);
    expect((await t.http.post('/v1/auth/sign-up').send({ email, password: 'eves own passphrase', name: 'Eve' })).status).toBe(201);
  });

  it('"this wasn\'t me" through the API: 409 once the address is proven, 400 for a dead token', async () => {
    const acme = await ssoOrganization(t, idp);
    const email = `flo@${acme.domain}`;
    const own = await attackerSignsUp(email);
    const token = tokenIn(await mailbox.waitFor(email, { subject: VERIFY }), '/verify-email');
    // A second message's token, then the first proves the address with the session.
    expect((await t.http.post('/v1/auth/verify-email/resend').set(...bearer(own.session))).status).toBe(202);
    const second = tokenIn(await mailbox.waitFor(email, { subject: VERIFY, count: 2 }), '/verify-email');
    expect((await t.http.post('/v1/auth/verify-email').set(...bearer(own.session)).send({ token })).status).toBe(200);
    const late = await t.http.post('/v1/auth/verify-email/decline').send({ token: second });
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('already_verified');
    expect((await t.http.get('/v1/me').set(...bearer(own.session))).status).toBe(200);
    const dead = await t.http.post('/v1/auth/verify-email/decline').send({ token });
    expect(dead.status).toBe(400);
    expect(dead.body.error).toBe('invalid_token');
  });
});
