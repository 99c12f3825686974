import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, signUp, uniqueEmail } from '../support/factories';
import { deliverToFolder, INVITATION_SUBJECT, type ReceivedMail } from '../support/mailbox';

/**
 * Names in mail and at input (docs/protection.md#names, docs/mail.md#what-is-sent): no message
 * greets by the account's name, which nobody proves; control characters in user and organization
 * names are gone before they are stored, so none starts a line in a subject or a body.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function mailTo(address: string): Promise<ReceivedMail[]> {
  return (await deliverToFolder(t)).filter((m) => m.to === address);
}

describe('no greeting by name', () => {
  it('a sign-up with someone else\'s address and a name that is a message: the verification mail says none of it', async () => {
    const victim = uniqueEmail('victim');
    const name = 'Your account is locked, call +1 555 0100 or visit https://evil.example';
    expect((await t.http.post('/v1/auth/sign-up').send({ email: victim, password: PASSWORD, name })).status).toBe(201);
    const [mail] = await mailTo(victim);
    expect(mail?.subject).toMatch(/Confirm your e-mail address/);
    // Before: "Hello Your account is locked, call +1 555 0100 or visit https://evil.example,".
    expect(mail!.text.startsWith('Hello,\n')).toBe(true);
    for (const part of [mail!.text, mail!.html, mail!.subject]) expect(part).not.toMatch(/evil\.example|555 0100/);
  });

  it('nor in a reset message or a notice', async () => {
    const user = await signUp(t, 'Greeted');
    expect((await t.http.patch('/v1/me').set(...bearer(user.token)).send({ name: 'Visit evil.example' })).status).toBe(200);
    expect((await t.http.post('/v1/auth/password-reset').send({ email: user.email })).status).toBe(202);
    // The reset is queued after the answer (src/auth/passwords.ts): wait for it.
    let mails: ReceivedMail[] = [];
    for (let tries = 0; tries < 50 && !mails.some((m) => /Reset your/.test(m.subject)); tries++) {
      await new Promise((r) => setTimeout(r, 100));
      mails = [...mails, ...(await mailTo(user.email))];
    }
    expect(mails.some((m) => /Reset your/.test(m.subject))).toBe(true);
    for (const mail of mails) expect(mail.text).not.toMatch(/evil\.example/);
  });
});

describe('control characters in names', () => {
  it('are stripped from a user\'s name at sign-up and PATCH /v1/me', async () => {
    const email = uniqueEmail('crlf');
    const res = await t.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: 'Eve\r\nBcc: all@corp.example\u0007\u202E' });
    expect(res.status).toBe(201);
    expect(res.body.user.name).toBe('Eve Bcc: all@corp.example');
    const patched = await t.http.patch('/v1/me').set(...bearer(res.body.session.token)).send({ name: '\tMallory\u2028Jones\u0085 ' });
    expect(patched.body.user.name).toBe('Mallory Jones');
    expect((await t.http.get('/v1/me').set(...bearer(res.body.session.token))).body.user.name).toBe('Mallory Jones');
  });

  it('are stripped from an organization\'s name, so an invitation\'s subject and lines stay whole; a name of nothing else is 400', async () => {
    const owner = await createOrganization(t, 'Acme\r\nSubject: You won');
    expect((await t.http.patch('/v1/me').set(...bearer(owner.token)).send({ name: 'Olga\nOwner' })).status).toBe(200);
    const org = await t.http.get('/v1/org').set(...bearer(owner.token));
    expect(org.body.organization.name).toBe('Acme Subject: You won');
    const invitee = uniqueEmail('invitee');
    expect((await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: invitee, role: 'member' })).status).toBe(201);
    const [invitation] = (await mailTo(invitee)).filter((m) => INVITATION_SUBJECT.test(m.subject));
    expect(invitation?.subject).toBe('Olga Owner invited you to join Acme Subject: You won');
    expect(invitation!.text).toContain('Olga Owner invited you to join Acme Subject: You won on');
    expect(invitation!.raw).not.toMatch(/^Subject: You won/m);

    const renamed = await t.http.patch('/v1/org').set(...bearer(owner.token)).send({ name: 'Acme\u000bLtd' });
    expect(renamed.body.item.name).toBe('Acme Ltd');
    for (const name of ['\r\n', '\u0007\u0008', ' \u2028 ']) {
      const bad = await t.http.patch('/v1/org').set(...bearer(owner.token)).send({ name });
      expect([bad.status, bad.body.details?.[0]?.path]).toEqual([400, ['body', 'name']]);
    }
  });
});
