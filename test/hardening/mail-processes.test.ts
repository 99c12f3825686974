import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { serverUrl, testDbKind } from '../support/env';
import { adminSql, call, startService, type ServiceProcess } from '../support/service-process';
import { startMailbox, tokenIn, type Mailbox } from '../support/mailbox';

/**
 * Mail sent by real service processes sharing one database (src/jobs/mail-messages.ts): in the
 * normal case every message is sent exactly once whichever process queued it; a process killed
 * while the mail server holds its message leaves the message to another process once the lease
 * expires — the one duplicate this can cause carries the same Message-ID. Server database only.
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;
/** Lease = 4 × this + 5 s: short enough for the kill test, long enough for a busy machine's SMTP replies. */
const TIMEOUT_MS = 3000;

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

maybe('mail across service processes', () => {
  const database = `cp_mail_${randomBytes(5).toString('hex')}`;
  let mailbox: Mailbox;
  let a: ServiceProcess;
  let b: ServiceProcess;
  let token: string;
  const started: ServiceProcess[] = [];
  const sql = new pg.Pool({ connectionString: serverUrl(database), max: 2 });
  const env = () => ({ SMTP_URL: mailbox.smtpUrl, MAIL_TIMEOUT_MS: String(TIMEOUT_MS), MAIL_POLL_MS: '200' });

  beforeAll(async () => {
    await adminSql(`CREATE DATABASE ${database}`);
    mailbox = await startMailbox();
    a = await startService(database, env());
    b = await startService(database, env());
    started.push(a, b);
    const email = uniqueEmail('mail');
    const signUp = await call(a.url, 'POST', '/v1/auth/sign-up', { email, password: PASSWORD, name: 'Mailer' });
    token = signUp.body.session.token;
    // The address is proven by the link the processes mail.
    const verification = await mailbox.waitFor(email);
    // Confirmed with the signing-up session, which keeps it (without one the session would end).
    expect((await call(b.url, 'POST', '/v1/auth/verify-email', { token: tokenIn(verification, '/verify-email') }, token)).status).toBe(200);
    expect((await call(a.url, 'POST', '/v1/org', { name: 'Mail Co' }, token)).status).toBe(201);
  }, 240_000);

  afterAll(async () => {
    for (const p of started) await p.kill();
    await mailbox.close();
    await sql.end();
    await adminSql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it('two processes send every message once', async () => {
    const emails = Array.from({ length: 30 }, (_, i) => uniqueEmail(`p${i}`));
    const statuses = await Promise.all(emails.map((email, i) => call(i % 2 ? a.url : b.url, 'POST', '/v1/invitations', { email, role: 'member' }, token)));
    expect(statuses.map((s) => s.status)).toEqual(Array(30).fill(201));
    for (const email of emails) await mailbox.waitFor(email);
    await waitFor('outcomes recorded', async () => (await sql.query("SELECT 1 FROM mail_messages WHERE status <> 'sent'")).rowCount === 0);
    // A little longer: a second copy would have arrived by now.
    await new Promise((r) => setTimeout(r, 500));
    for (const email of emails) {
      expect(mailbox.to(email)).toHaveLength(1);
      expect(tokenIn(mailbox.to(email)[0]!, '/accept-invitation')).toMatch(/^cpi_/);
    }
    const { rows } = await sql.query<{ n: string }>("SELECT count(*) AS n FROM mail_messages WHERE kind = 'invitation' AND attempts = 1 AND body_sealed IS NULL");
    expect(Number(rows[0]!.n)).toBe(30);
  }, 120_000);

  it('a process killed mid-send: another sends the message once its lease expires (one duplicate, same Message-ID)', async () => {
    expect(await b.stop()).toBe(0);
    mailbox.replyDelayMs = 60_000;
    const email = uniqueEmail('killed');
    expect((await call(a.url, 'POST', '/v1/invitations', { email, role: 'member' }, token)).status).toBe(201);
    await mailbox.waitFor(email);
    await a.kill();
    mailbox.replyDelayMs = 0;
    const { rows: held } = await sql.query<{ status: string; attempts: number; lease_until: Date | null }>('SELECT status, attempts, lease_until FROM mail_messages WHERE recipient = $1', [email]);
    expect(held).toEqual([expect.objectContaining({ status: 'pending', attempts: 1 })]);
    expect(held[0]!.lease_until).not.toBeNull();

    const c = await startService(database, env());
    started.push(c);
    await mailbox.waitFor(email, { count: 2, timeoutMs: 60_000 });
    const [first, second] = mailbox.to(email);
    expect(second!.messageId).toBe(first!.messageId);
    await waitFor('the outcome', async () => (await sql.query("SELECT 1 FROM mail_messages WHERE recipient = $1 AND status = 'sent' AND attempts = 2", [email])).rowCount === 1);
    expect(await c.stop()).toBe(0);
  }, 180_000);
});
