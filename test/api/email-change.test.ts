import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, signUp, uniqueEmail, type OrgOwner } from '../support/factories';
import type { ManualClock } from '../support/clock';
import { mailEnv, startMailbox, testMailer, type Mailbox, type ReceivedMail } from '../support/mailbox';

/**
 * Changing the account's e-mail address (docs/accounts.md#the-callers-own-account), through HTTP and a real SMTP
 * server: the confirmation link is read from the message the new address receives.
 */
let t: TestApp;
let mailbox: Mailbox;
let owner: OrgOwner;
beforeAll(async () => {
  mailbox = await startMailbox();
  t = await createTestApp({ env: mailEnv(mailbox) });
  owner = await createOrganization(t, 'Email Change Org');
}, 120_000);
afterAll(async () => {
  await t.close();
  await mailbox.close();
});

const requestChange = (token: string, email: string) => t.http.post('/v1/me/email').set(...bearer(token)).send({ email });
const confirm = (token: string) => t.http.post('/v1/auth/confirm-email-change').send({ token });

/** The token of the confirmation link in the `count`th message to `address`. */
async function confirmationToken(address: string, count = 1): Promise<string> {
  await testMailer(t).runOnce();
  const message: ReceivedMail = await mailbox.waitFor(address, { subject: /Confirm your new e-mail address/, count });
  const link = /https?:\/\/\S+\/confirm-email-change\?token=\S+/.exec(message.text);
  if (!link) throw new Error(`no confirmation link in: ${message.text}`);
  return new URL(link[0]).searchParams.get('token')!;
}

describe('POST /v1/me/email and POST /v1/auth/confirm-email-change', () => {
  it('mails a link to the new address and a notice to the old; the link applies the change, once', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const newEmail = uniqueEmail('moved');
    const res = await requestChange(member.token, newEmail);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ ok: true });
    const token = await confirmationToken(newEmail);
    const notice = await mailbox.waitFor(member.email, { subject: /e-mail address is being changed/ });
    expect(notice.text).toContain(newEmail);
    expect(notice.text).not.toContain(token);
    // Nothing changes until the link is followed.
    expect((await t.http.get('/v1/me').set(...bearer(member.token))).body.user.email).toBe(member.email);

    const applied = await confirm(token);
    expect(applied.status).toBe(200);
    expect(applied.body).toMatchObject({ ok: true, user: { id: member.userId, email: newEmail, emailVerified: true } });
    expect((await t.http.get('/v1/me').set(...bearer(member.token))).body.user.email).toBe(newEmail);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: newEmail, password: PASSWORD })).status).toBe(200);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: member.email, password: PASSWORD })).status).toBe(401);
    const log = await t.http.get('/v1/audit-logs').query({ action: 'member.email_changed' }).set(...bearer(owner.token));
    expect(log.body.items[0]).toMatchObject({ target: { type: 'member', id: member.memberId }, changes: { email: { from: member.email, to: newEmail } } });

    const again = await confirm(token);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_token');
  });

  it('a new request ends the previous link; unknown and expired links are invalid_token', async () => {
    const user = await signUp(t, 'twice');
    const first = uniqueEmail('first');
    const second = uniqueEmail('second');
    expect((await requestChange(user.token, first)).status).toBe(202);
    const firstToken = await confirmationToken(first);
    expect((await requestChange(user.token, second)).status).toBe(202);
    const secondToken = await confirmationToken(second);
    expect((await confirm(firstToken)).body.error).toBe('invalid_token');
    expect((await confirm('cpa_not-a-real-token')).body.error).toBe('invalid_token');
    (t.clock as ManualClock).advance(60 * 60_000 + 1000);
    const expired = await confirm(secondToken);
    expect(expired.status).toBe(400);
    expect(expired.body.error).toBe('invalid_token');
    expect((await t.http.get('/v1/me').set(...bearer(user.token))).body.user.email).toBe(user.email);
  });

  it('a taken address gets the answer a free one gets, and its owner a notice instead of a link', async () => {
    const user = await signUp(t, 'prober');
    const other = await signUp(t, 'holder');
    const free = await requestChange(user.token, uniqueEmail('free'));
    const taken = await requestChange(user.token, other.email.toUpperCase());
    expect(taken.status).toBe(free.status);
    expect(taken.body).toEqual(free.body);
    expect(taken.headers['content-length']).toBe(free.headers['content-length']);
    await testMailer(t).runOnce();
    const notice = await mailbox.waitFor(other.email, { subject: /Someone tried to move an account to your address/ });
    expect(notice.text).not.toMatch(/confirm-email-change/);
    expect(notice.text).not.toContain(user.email);
    // The holder's account is untouched.
    expect((await t.http.get('/v1/me').set(...bearer(other.token))).body.user.email).toBe(other.email);
    expect((await t.http.get('/v1/me').set(...bearer(user.token))).body.user.email).toBe(user.email);
  });

  it('409 email_taken when the address is taken meanwhile', async () => {
    const user = await signUp(t, 'racer');

    const wanted = uniqueEmail('wanted');
    expect((await requestChange(user.token, wanted)).status).toBe(202);
    const token = await confirmationToken(wanted);
    expect((await t.http.post('/v1/auth/sign-up').send({ email: wanted, password: PASSWORD, name: 'First' })).status).toBe(201);
    const res = await confirm(token);
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('email_taken');
    expect((await t.http.get('/v1/me').set(...bearer(user.token))).body.user.email).toBe(user.email);
  });

  it('refuses bad input naming the field, a stale session and an API key', async () => {
    const user = await signUp(t, 'strict');
    for (const body of [{ email: 'not an address' }, { email: user.email }, {}]) {
      const res = await t.http.post('/v1/me/email').set(...bearer(user.token)).send(body);
      expect(res.status).toBe(400);
      expect(res.body.details[0].path).toEqual(['body', 'email']);
    }
    const missing = await t.http.post('/v1/auth/confirm-email-change').send({});
    expect(missing.body.details[0].path).toEqual(['body', 'token']);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'no email change' });
    expect((await requestChange(key.body.key, uniqueEmail('key'))).status).toBe(401);
    (t.clock as ManualClock).advance(t.settings.freshSessionMaxAgeMs + 1000);
    const stale = await requestChange(user.token, uniqueEmail('stale'));
    expect(stale.status).toBe(403);
    expect(stale.body.reason).toBe('fresh_session_required');
  });

  it('a user asks at most RATE_LIMIT_EMAIL_CHANGE_USER times an hour (429 with Retry-After)', async () => {
    const user = await signUp(t, 'eager');
    for (let i = 0; i < 5; i++) expect((await requestChange(user.token, uniqueEmail(`eager${i}`))).status).toBe(202);
    const limited = await requestChange(user.token, uniqueEmail('eager-more'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });

  it("an address that comes from the organization's identity provider is changed there (403)", async () => {
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
    // Creating a connection needs a fresh session (earlier tests moved the clock).
    expect((await t.http.post('/v1/auth/reauthenticate').set(...bearer(owner.token)).send({ password: PASSWORD })).status).toBe(200);
    const connection = await t.http
      .post('/v1/sso/connections')
      .set(...bearer(owner.token))
      .send({ type: 'oidc', name: 'Managed IdP', issuer: 'https://login.example.test/managed', clientId: 'c', clientSecret: 'managed-client-secret-0123' });
    expect(connection.status).toBe(201);
    const link = async (userId: string, email: string) => {
      const now = t.clock.now();
      await t.db
        .insertInto('sso_identities')
        .values({ connection_id: connection.body.item.id, subject: `sub-${userId}`, organization_id: owner.organizationId, user_id: userId, email, created_at: now, last_sign_in_at: now })
        .execute();
    };

    const managed = await addMember(t, owner.organizationId, 'member');
    await link(managed.userId, managed.email);
    const refused = await requestChange(managed.token, uniqueEmail('elsewhere'));
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toBe('email_managed_by_identity_provider');

    // Linked between the request and the confirmation: refused at the confirmation too.
    const later = await addMember(t, owner.organizationId, 'member');
    const target = uniqueEmail('later');
    expect((await requestChange(later.token, target)).status).toBe(202);
    const token = await confirmationToken(target);
    await link(later.userId, later.email);
    const res = await confirm(token);
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('email_managed_by_identity_provider');
    expect((await t.http.get('/v1/me').set(...bearer(later.token))).body.user.email).toBe(later.email);
  });
});
