import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, signUpUnverified, uniqueEmail } from '../support/factories';
import { mailEnv, startMailbox, testMailer, tokenIn, type Mailbox } from '../support/mailbox';
import type { ManualClock } from '../support/clock';
import type { JobRunner } from '../../src/jobs';
import { newId } from '../../src/lib/ids';
import { insertMember } from '../../src/members/store';

/**
 * E-mail verification (docs/accounts.md#sign-up-and-e-mail-verification), through HTTP and a real SMTP server: sign-up mails a
 * link, the link's token proves the address, and until then a session under EMAIL_VERIFICATION
 * `required` (the default) reaches only its account routes.
 */
let mailbox: Mailbox;
let t: TestApp;
let mailer: JobRunner;
const clock = () => t.clock as ManualClock;
const VERIFY = /Confirm your e-mail address/;

beforeAll(async () => {
  mailbox = await startMailbox();
  t = await createTestApp({ env: mailEnv(mailbox) });
  // Sends in the background (every MAIL_POLL_MS), as the service does.
  mailer = testMailer(t);
  mailer.start();
});
afterAll(async () => {
  await mailer.stop();
  await t.close();
  await mailbox.close();
});

/** The token of the newest verification link mailed to `email` (the `count`-th one). */
async function verificationToken(email: string, count = 1): Promise<string> {
  return tokenIn(await mailbox.waitFor(email, { subject: VERIFY, count }), '/verify-email');
}

/** Confirms with the account's own session when given (its credentials stay), else as a browser would. */
const verify = (token: string, session?: string) => (session ? t.http.post('/v1/auth/verify-email').set(...bearer(session)) : t.http.post('/v1/auth/verify-email')).send({ token });
const me = (token: string) => t.http.get('/v1/me').set(...bearer(token));

describe('sign-up and the link', () => {
  it('mails a link at sign-up; following it verifies the address once', async () => {
    const email = uniqueEmail('new');
    const up = await t.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: 'New' });
    expect(up.status).toBe(201);
    expect(up.body.user).toMatchObject({ emailVerified: false, emailVerifiedAt: null });
    expect((await me(up.body.session.token)).body.user).toMatchObject({ emailVerified: false, emailVerifiedAt: null });

    const token = await verificationToken(email);
    expect(token).toMatch(/^cpa_[A-Za-z0-9_-]{43}$/);
    const res = await verify(token, up.body.session.token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, user: expect.objectContaining({ id: up.body.user.id, email, emailVerified: true, emailVerifiedAt: clock().now().toISOString() }), passwordResetRequired: false });
    expect((await me(up.body.session.token)).body.user).toMatchObject({ emailVerified: true, emailVerifiedAt: clock().now().toISOString() });
    // The session now reaches everything.
    expect((await t.http.post('/v1/org').set(...bearer(up.body.session.token)).send({ name: 'Verified Co' })).status).toBe(201);

    // Used once.
    const again = await verify(token, up.body.session.token);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ error: 'invalid_token', message: expect.any(String) });
  });

  it('audits the verification in the organizations the user belongs to', async () => {
    const owner = await createOrganization(t, 'Verifying Org');
    const joiner = await signUpUnverified(t, 'joiner');
    const memberId = newId('member');
    await insertMember(t.db, { id: memberId, organizationId: owner.organizationId, userId: joiner.userId, role: 'member', now: clock().now() });
    expect((await verify(await verificationToken(joiner.email), joiner.token)).status).toBe(200);
    const entries = await t.http.get('/v1/audit-logs').query({ action: 'member.email_verified' }).set(...bearer(owner.token));
    expect(entries.body.items).toEqual([expect.objectContaining({ action: 'member.email_verified', target: { type: 'member', id: memberId }, changes: { emailVerified: { from: false, to: true } } })]);
  });

  it('answers invalid_token alike for an unknown, an expired and a wrong-purpose token; bad bodies name the field', async () => {
    const unknown = await verify(`cpa_${'A'.repeat(43)}`);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('invalid_token');
    expect((await verify('not-a-token')).body.error).toBe('invalid_token');

    const user = await signUpUnverified(t, 'late');
    const token = await verificationToken(user.email);
    clock().advance(24 * 60 * 60_000 + 1000);
    const expired = await verify(token);
    expect(expired.status).toBe(400);
    expect(expired.body).toEqual(unknown.body);
    expect((await me(user.token)).body.user.emailVerified).toBe(false);

    // A password reset link is not a verification link (nor the other way round).
    const resetOf = await signUpUnverified(t, 'reset');
    expect((await t.http.post('/v1/auth/password-reset').send({ email: resetOf.email })).status).toBe(202);
    const resetToken = tokenIn(await mailbox.waitFor(resetOf.email, { subject: /Reset your/ }), '/reset-password');
    expect((await verify(resetToken)).body).toEqual(unknown.body);
    const verifyToken = await verificationToken(resetOf.email);
    const wrongWay = await t.http.post('/v1/auth/password-reset/confirm').send({ token: verifyToken, password: 'a brand new passphrase' });
    expect(wrongWay.status).toBe(400);
    expect(wrongWay.body.error).toBe('invalid_token');
    // Neither attempt used the other link.
    expect((await verify(verifyToken)).status).toBe(200);

    const missing = await t.http.post('/v1/auth/verify-email').send({});
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'invalid_request', details: [expect.objectContaining({ path: ['body', 'token'] })] });
  });
});

describe('resend', () => {
  it('sends a new link at most once a minute and five times an hour (429 with Retry-After), then 409 once verified', async () => {
    const user = await signUpUnverified(t, 'resend');
    await verificationToken(user.email);
    const resend = () => t.http.post('/v1/auth/verify-email/resend').set(...bearer(user.token));
    expect((await resend()).status).toBe(202);
    const soon = await resend();
    expect(soon.status).toBe(429);
    expect(Number(soon.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(soon.headers['retry-after'])).toBeLessThanOrEqual(60);
    for (let i = 0; i < 4; i++) {
      clock().advance(61_000);
      expect((await resend()).status).toBe(202);
    }
    clock().advance(61_000);
    const hourly = await resend();
    expect(hourly.status).toBe(429);
    expect(Number(hourly.headers['retry-after'])).toBeGreaterThan(60);

    // Six messages arrived; the newest link verifies (earlier ones stay valid until they expire).
    const latest = await verificationToken(user.email, 6);
    expect((await verify(latest, user.token)).status).toBe(200);
    clock().advance(60 * 60_000);
    const done = await resend();
    expect(done.status).toBe(409);
    expect(done.body.error).toBe('already_verified');
  });

  it('is for sessions only', async () => {
    expect((await t.http.post('/v1/auth/verify-email/resend')).status).toBe(401);
  });
});

describe('the gate while EMAIL_VERIFICATION is required', () => {
  it('keeps an unverified session to its account routes: 403 email_not_verified elsewhere, no API key ever', async () => {
    const user = await signUpUnverified(t, 'gated');
    const auth = bearer(user.token);
    const refused = await t.http.post('/v1/org').set(...auth).send({ name: 'Too soon' });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: 'forbidden', reason: 'email_not_verified' });

    // A member of an organization (added directly) still cannot reach it or make a key.
    const owner = await createOrganization(t, 'Gated Org');
    await insertMember(t.db, { id: newId('member'), organizationId: owner.organizationId, userId: user.userId, role: 'admin', now: clock().now() });
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD });
    const member = bearer(signIn.body.session.token);
    for (const res of [
      await t.http.post('/v1/api-keys').set(...member).send({ name: 'sneaky' }),
      await t.http.get('/v1/org').set(...member),
      await t.http.get('/v1/members').set(...member),
      await t.http.get('/v1/me/mfa').set(...member),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.reason).toBe('email_not_verified');
    }
    expect(await t.db.selectFrom('api_keys').select('id').where('organization_id', '=', owner.organizationId).execute()).toEqual([]);

    // What it may use: GET /v1/me, resend, accepting an invitation, changing its password, sign-out.
    expect((await me(user.token)).status).toBe(200);
    expect((await t.http.post('/v1/auth/verify-email/resend').set(...auth)).status).toBe(202);
    const accept = await t.http.post('/v1/invitations/accept').set(...auth).send({ token: `cpi_${'x'.repeat(43)}` });
    expect(accept.body.reason).not.toBe('email_not_verified');
    expect([400, 404]).toContain(accept.status);
    const change = await t.http.post('/v1/me/password').set(...auth).send({ currentPassword: 'wrong password here', newPassword: 'a brand new passphrase' });
    expect(change.status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-out').set(...auth)).status).toBe(204);

    // Once verified, the same member reaches the organization.
    expect((await verify(await verificationToken(user.email, 2), signIn.body.session.token)).status).toBe(200);
    expect((await t.http.get('/v1/org').set(...member)).status).toBe(200);
  });
});

describe('an invitation accepted by its token', () => {
  it('proves the address it was sent to', async () => {
    const owner = await createOrganization(t, 'Inviting Org');
    const user = await signUpUnverified(t, 'invitee');
    expect((await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: user.email, role: 'member' })).status).toBe(201);
    const token = tokenIn(await mailbox.waitFor(user.email, { subject: /invited you/ }), '/accept-invitation');
    const accepted = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token });
    expect(accepted.status).toBe(200);
    expect((await me(user.token)).body.user.emailVerified).toBe(true);
    expect((await t.http.get('/v1/org').set(...bearer(user.token))).status).toBe(200);
  });
});

describe('EMAIL_VERIFICATION=optional', () => {
  let relaxed: TestApp;
  beforeAll(async () => {
    relaxed = await createTestApp({ env: { ...mailEnv(mailbox), EMAIL_VERIFICATION: 'optional' } });
  });
  afterAll(() => relaxed.close());

  it('still mails the link, and lets an unverified user act', async () => {
    const email = uniqueEmail('relaxed');
    const up = await relaxed.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: 'Relaxed' });
    expect(up.body.user.emailVerified).toBe(false);
    expect((await relaxed.http.post('/v1/org').set(...bearer(up.body.session.token)).send({ name: 'Relaxed Co' })).status).toBe(201);
    expect(await relaxed.db.selectFrom('mail_messages').select('kind').where('recipient', '=', email).execute()).toEqual([{ kind: 'verify_email' }]);
  });
});
