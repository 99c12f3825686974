import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, uniqueEmail, type OrgOwner } from '../support/factories';
import { linkIn, mailEnv, startMailbox, testMailer, tokenIn, type Mailbox } from '../support/mailbox';
import type { ManualClock } from '../support/clock';
import type { JobRunner } from '../../src/jobs';
import { queueNotice } from '../../src/mail/queue';
import type { MailKind } from '../../src/mail/templates';
import { SecretBox } from '../../src/lib/crypto';
import { loadContract } from '../support/spec';

/**
 * Mail delivery (docs/mail.md): a change queues its message in its own transaction
 * and the job runner sends it through nodemailer to a real SMTP server (test/support/mailbox.ts);
 * a mail server that is down, refuses or drops the connection delays the message, never loses it.
 */
let mailbox: Mailbox;
let t: TestApp;
let mailer: JobRunner;
const clock = () => t.clock as ManualClock;

beforeAll(async () => {
  mailbox = await startMailbox();
  t = await createTestApp({ env: { ...mailEnv(mailbox), MAIL_FROM: '"Acme Control Plane" <no-reply@acme.example>' } });
  mailer = testMailer(t);
});
afterAll(async () => {
  await mailer.stop();
  await t.close();
  await mailbox.close();
});
afterEach(() => {
  mailbox.mode = 'accept';
});

async function platformAdmin(): Promise<OrgOwner> {
  const owner = await createOrganization(t, 'Platform');
  await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', owner.userId).execute();
  return owner;
}

async function invite(owner: OrgOwner, email = uniqueEmail('invitee')) {
  const res = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email, role: 'member' });
  expect(res.status).toBe(201);
  return { email, invitation: res.body.item as { id: string } };
}

async function messagesTo(email: string) {
  return t.db.selectFrom('mail_messages').select(['id', 'status', 'attempts', 'last_error', 'body_sealed', 'next_attempt_at', 'sent_at']).where('recipient', '=', email).execute();
}

describe('an invitation is mailed', () => {
  it('queues the message with the invitation and sends it: text and HTML parts, names, a working link', async () => {
    const owner = await createOrganization(t, 'Globex & Co');
    await t.db.updateTable('users').set({ name: 'Olive <Owner>' }).where('id', '=', owner.userId).execute();
    const { email } = await invite(owner);
    const [queued] = await messagesTo(email);
    expect(queued).toMatchObject({ status: 'pending', attempts: 0 });
    // The body is sealed at rest: no link token in the row, in clear.
    expect(queued!.body_sealed).toMatch(/^v1\./);
    expect(new SecretBox(t.settings.secretKey!).decrypt(queued!.body_sealed!)).toContain('/accept-invitation?token=');

    expect(await mailer.runOnce()).toBeGreaterThanOrEqual(1);
    const mail = await mailbox.waitFor(email);
    expect(mail.from).toBe('no-reply@acme.example');
    expect(mail.subject).toBe('Olive <Owner> invited you to join Globex & Co');
    expect(mail.text).toContain('Olive <Owner> invited you to join Globex & Co on Acme Control Plane as member.');
    expect(mail.html).toContain('Olive &lt;Owner&gt; invited you to join Globex &amp; Co');
    expect(mail.html).not.toContain('<Owner>');
    expect(mail.messageId).toBe(`<${queued!.id}@acme.example>`);
    const link = linkIn(mail, '/accept-invitation');
    expect(link.origin).toBe(t.settings.mail.appBaseUrl);
    expect(mail.html).toContain(link.href.replace(/&/g, '&amp;'));
    expect(tokenIn(mail, '/accept-invitation')).toMatch(/^cpi_/);

    const [sent] = await messagesTo(email);
    // Sent: the body (and the link it carried) is erased; the record stays.
    expect(sent).toMatchObject({ status: 'sent', attempts: 1, last_error: null, body_sealed: null, next_attempt_at: null });
    expect(sent!.sent_at).not.toBeNull();
  });

  it('a change that fails queues nothing: the invitation and its message commit together or not at all', async () => {
    const owner = await createOrganization(t);
    const { email } = await invite(owner);
    const again = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email, role: 'member' });
    expect(again.status).toBe(409);
    expect(await messagesTo(email)).toHaveLength(1);
    const bad = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: uniqueEmail('x'), role: 'no-such-role' });
    expect(bad.status).toBe(400);
  });

  it('a message queued inside a transaction that rolls back leaves nothing', async () => {
    const to = uniqueEmail('rollback');
    await expect(
      t.db.transaction().execute(async (trx) => {
        await queueNotice(trx, { secrets: new SecretBox(t.settings.secretKey!), clock: t.clock, settings: t.settings }, { kind: 'password_changed', to });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await messagesTo(to)).toEqual([]);
  });
});

describe('a mail server that fails delays the message, never loses it', () => {
  it.each([
    ['down', async () => mailbox.stop(), async () => mailbox.start()],
    ['refusing (554)', async () => void (mailbox.mode = 'refuse'), async () => void (mailbox.mode = 'accept')],
    ['dropping the connection', async () => void (mailbox.mode = 'drop'), async () => void (mailbox.mode = 'accept')],
  ])('%s: the change is committed, the message retried with backoff and delivered once it recovers', async (_what, fail, recover) => {
    const owner = await createOrganization(t);
    await fail();
    let recovered = false;
    try {
      const { email, invitation } = await invite(owner);
      // The change is committed whatever the mail server does.
      const listed = await t.http.get('/v1/invitations').set(...bearer(owner.token));
      expect(listed.body.items.map((i: { id: string }) => i.id)).toContain(invitation.id);

      await mailer.runOnce();
      const [first] = await messagesTo(email);
      expect(first).toMatchObject({ status: 'pending', attempts: 1 });
      expect(first!.last_error).toEqual(expect.any(String));
      expect(first!.body_sealed).not.toBeNull();
      // Not due again before the first backoff step (about 5 s).
      const due = first!.next_attempt_at!.getTime() - clock().now().getTime();
      expect(due).toBeGreaterThanOrEqual(3_900);
      expect(due).toBeLessThanOrEqual(6_100);
      await mailer.runOnce();
      expect((await messagesTo(email))[0]!.attempts).toBe(1);

      await recover();
      recovered = true;
      clock().advance(6_100);
      await mailer.runOnce();
      const mail = await mailbox.waitFor(email);
      expect(tokenIn(mail, '/accept-invitation')).toMatch(/^cpi_/);
      expect(await messagesTo(email)).toEqual([expect.objectContaining({ status: 'sent', attempts: 2, body_sealed: null, last_error: null })]);
      expect(mailbox.to(email)).toHaveLength(1);
    } finally {
      if (!recovered) await recover();
    }
  });

  it('gives up after MAIL_MAX_ATTEMPTS (5 s, 30 s, 2 min, 10 min, 1 h apart), erasing the body', async () => {
    const owner = await createOrganization(t);
    mailbox.mode = 'refuse';
    const { email } = await invite(owner);
    const gaps: number[] = [];
    for (let attempt = 1; attempt <= 6; attempt++) {
      await mailer.runOnce();
      const [row] = await messagesTo(email);
      expect(row!.attempts).toBe(attempt);
      if (attempt < 6) {
        const gap = row!.next_attempt_at!.getTime() - clock().now().getTime();
        gaps.push(gap);
        clock().advance(gap);
      } else {
        expect(row).toMatchObject({ status: 'failed', body_sealed: null, next_attempt_at: null });
        expect(row!.last_error).toContain('554');
      }
    }
    [5_000, 30_000, 120_000, 600_000, 3_600_000].forEach((base, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(base * 0.8);
      expect(gaps[i]).toBeLessThan(base * 1.2);
    });
    mailbox.mode = 'accept';
    clock().advance(86_400_000);
    await mailer.runOnce();
    expect(mailbox.to(email)).toHaveLength(0);
  });

  it('a running mailer sends in the background, without a poll from the test', async () => {
    const owner = await createOrganization(t);
    const background = testMailer(t);
    background.start();
    try {
      const { email } = await invite(owner);
      await mailbox.waitFor(email);
    } finally {
      await background.stop();
    }
  });
});

describe('without SMTP_URL: .eml files in MAIL_DIR', () => {
  it('writes one RFC 5322 file per message, which a mail parser reads with both parts', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'mail-'));
    const files = await createTestApp({ database: t.database, clock: t.clock, env: { MAIL_DIR: dir } });
    const runner = testMailer(files);
    try {
      expect(files.settings.mail.smtpUrl).toBeUndefined();
      const owner = await createOrganization(files, 'Files Inc');
      const { email } = await invite(owner);
      await runner.runOnce();
      const [row] = await messagesTo(email);
      expect(row).toMatchObject({ status: 'sent', last_error: null });
      const names = await readdir(dir);
      expect(names).toContain(`${row!.id}.eml`);
      const raw = await readFile(path.join(dir, `${row!.id}.eml`));
      expect(raw.toString('latin1')).toContain('\r\n');
      const parsed = await simpleParser(raw);
      expect(parsed.subject).toContain('Files Inc');
      expect(parsed.text).toMatch(/\/accept-invitation\?token=cpi_/);
      expect(parsed.html).toEqual(expect.stringContaining('/accept-invitation?token=cpi_'));
    } finally {
      await runner.stop();
      await files.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('writes parts a person reads in an editor: the link on one line, copied as it is, and names in UTF-8', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'mail-'));
    const files = await createTestApp({ database: t.database, clock: t.clock, env: { MAIL_DIR: dir } });
    const runner = testMailer(files);
    try {
      const owner = await createOrganization(files, 'Zoë’s Café');
      const { email } = await invite(owner);
      await runner.runOnce();
      const [row] = await messagesTo(email);
      // What a person sees with `less` or a text editor: the file's bytes as UTF-8.
      const shown = (await readFile(path.join(dir, `${row!.id}.eml`))).toString('utf8');
      expect(shown).toContain('Content-Transfer-Encoding: 8bit');
      // Headers stay ASCII (a name in the subject is an RFC 2047 word); the parts are as written.
      const parts = shown.slice(shown.indexOf('\r\n\r\n'));
      expect(parts).not.toMatch(/quoted-printable|=3D|=\r\n/i);
      expect(shown).toContain('invited you to join Zoë’s Café');
      // The link a person copies: the whole line, as it stands in the file.
      const line = shown.split('\r\n').find((l) => l.includes('/accept-invitation?token='));
      expect(line).toMatch(/^https?:\/\/\S+\/accept-invitation\?token=cpi_\S+$/);
      const token = new URL(line!).searchParams.get('token')!;
      const preview = await files.http.get('/v1/invitations/preview').query({ token });
      expect({ status: preview.status, organization: preview.body.organization?.name }).toEqual({ status: 200, organization: 'Zoë’s Café' });
      // Still a message every mail reader parses the same.
      const parsed = await simpleParser(Buffer.from(shown, 'utf8'));
      expect(parsed.text).toContain(line);
    } finally {
      await runner.stop();
      await files.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /v1/admin/mail', () => {
  it('lists messages newest first with their delivery record, filtered by status and kind, never a body or token', async () => {
    const root = await platformAdmin();
    const owner = await createOrganization(t);
    const first = await invite(owner);
    clock().advance(10);
    const second = await invite(owner);
    mailbox.mode = 'refuse';
    await mailer.runOnce();
    mailbox.mode = 'accept';

    const res = await t.http.get('/v1/admin/mail?limit=2').set(...bearer(root.token));
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual([
      { id: expect.stringMatching(/^msg_/), kind: 'invitation', to: second.email, status: 'pending', attempts: 1, lastError: expect.stringContaining('554'), createdAt: expect.any(String), sentAt: null },
      expect.objectContaining({ to: first.email, status: 'pending' }),
    ]);
    expect(JSON.stringify(res.body)).not.toMatch(/cpi_|token|v1\./);
    const next = await t.http.get('/v1/admin/mail').query({ limit: 2, cursor: res.body.nextCursor }).set(...bearer(root.token));
    expect(next.status).toBe(200);
    expect(next.body.items.map((i: { to: string }) => i.to)).not.toContain(second.email);

    clock().advance(6_000);
    await mailer.runOnce();
    const sent = await t.http.get('/v1/admin/mail').query({ status: 'sent', kind: 'invitation' }).set(...bearer(root.token));
    expect(sent.body.items.slice(0, 2)).toEqual([
      expect.objectContaining({ to: second.email, status: 'sent', attempts: 2, lastError: null, sentAt: expect.any(String) }),
      expect.objectContaining({ to: first.email, status: 'sent' }),
    ]);
    // The kind filter: verification messages only (other tests of this file leave failed ones),
    // none of this test's invitations.
    const verifications = await t.http.get('/v1/admin/mail').query({ kind: 'verify_email', limit: 100 }).set(...bearer(root.token));
    expect(verifications.status).toBe(200);
    expect(verifications.body.items.length).toBeGreaterThan(0);
    expect(verifications.body.items.every((i: { kind: string }) => i.kind === 'verify_email')).toBe(true);
    expect(verifications.body.items.map((i: { to: string }) => i.to)).not.toEqual(expect.arrayContaining([first.email]));
    expect(verifications.body.items.map((i: { to: string }) => i.to)).not.toEqual(expect.arrayContaining([second.email]));
    // A cursor of one filtered list is refused by another.
    const mixed = await t.http.get('/v1/admin/mail').query({ status: 'sent', cursor: res.body.nextCursor }).set(...bearer(root.token));
    expect(mixed.status).toBe(400);
    expect(mixed.body.details[0].path).toEqual(['query', 'cursor']);
  });

  it('is for platform admins only; bad filters are 400 naming the parameter', async () => {
    const root = await platformAdmin();
    const owner = await createOrganization(t);
    const res = await t.http.get('/v1/admin/mail').set(...bearer(owner.token));
    expect(res.status).toBe(403);
    expect(res.body.reason).toBe('platform_admin_required');
    expect((await t.http.get('/v1/admin/mail')).status).toBe(401);
    for (const [name, value] of [['status', 'lost'], ['kind', 'spam']]) {
      const bad = await t.http.get('/v1/admin/mail').query({ [name!]: value }).set(...bearer(root.token));
      expect(bad.status).toBe(400);
      expect(bad.body.details[0].path).toEqual(['query', name]);
    }
  });

  it('the spec names every kind of message the service sends', () => {
    const spec = loadContract() as unknown as { components: { schemas: { MailKind: { enum: string[] } } } };
    // Every kind the templates take, once (the record fails to compile when a kind is added or gone).
    const kinds: Record<MailKind, true> = {
      invitation: true,
      verify_email: true,
      password_reset: true,
      password_reset_unavailable: true,
      password_changed: true,
      email_change_confirm: true,
      email_change_notice: true,
      email_change_taken: true,
      security_notice: true,
    };
    expect(new Set(spec.components.schemas.MailKind.enum)).toEqual(new Set(Object.keys(kinds)));
  });
});
