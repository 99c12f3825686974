import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, uniqueEmail, type OrgOwner } from '../support/factories';
import { mailEnv, startMailbox, testMailer, type Mailbox } from '../support/mailbox';
import type { ManualClock } from '../support/clock';
import { WEBHOOK_TEST_ENV } from '../support/webhooks';
import { markShuttingDown } from '../../src/system/lifecycle';

/** GET /ready (docs/running-the-service.md#what-runs): warnings for failing mail and old outboxes, never unready. */
describe('GET /ready warnings', () => {
  let t: TestApp;
  let owner: OrgOwner;
  let mailbox: Mailbox;
  let mailer: ReturnType<typeof testMailer>;

  beforeAll(async () => {
    mailbox = await startMailbox();
    t = await createTestApp({ env: { ...WEBHOOK_TEST_ENV, ...mailEnv(mailbox) } });
    owner = await createOrganization(t, 'Ready');
    mailer = testMailer(t);
  }, 240_000);
  afterAll(async () => {
    await mailer?.stop();
    await t?.close();
    await mailbox?.close();
  });

  const ready = async () => {
    const res = await t.http.get('/ready');
    expect(res.status).toBe(200);
    return res.body as { status: string; warnings?: { code: string; message: string }[] };
  };

  it('has no warnings while nothing waits', async () => {
    expect(await ready()).toEqual({ status: 'ok' });
  });

  it('warns when the latest mail send failed, and stops once one succeeds', async () => {
    mailbox.mode = 'refuse';
    const invite = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: uniqueEmail('ready'), role: 'member' });
    expect(invite.status).toBe(201);
    await mailer.runOnce();
    expect((await ready()).warnings?.map((w) => w.code)).toEqual(['mail_failing']);

    mailbox.mode = 'accept';
    // Past the first retry's backoff (5 s): the refused message and a new one both go out.
    (t.clock as ManualClock).advance(10_000);
    const email = uniqueEmail('ready');
    const next = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email, role: 'member' });
    expect(next.status).toBe(201);
    await mailer.runOnce();
    await mailbox.waitFor(email);
    expect((await ready()).warnings).toBeUndefined();
  });

  it('warns when a webhook delivery has waited more than ten minutes, still ready', async () => {
    const hook = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: 'http://127.0.0.1:9/in', events: ['team.created'] });
    expect(hook.status).toBe(201);
    expect((await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Queued' })).status).toBe(201);
    expect((await ready()).warnings).toBeUndefined();
    (t.clock as ManualClock).advance(11 * 60_000);
    const body = await ready();
    expect(body.status).toBe('ok');
    expect(body.warnings).toEqual([{ code: 'webhook_backlog', message: expect.stringMatching(/^1 webhook deliveries pending; the oldest was queued 11 minutes ago/) }]);
  });
});

describe('GET /ready while shutting down', () => {
  it('answers 503 once SIGTERM has started the shutdown (this process only; /health stays 200)', async () => {
    const t = await createTestApp();
    try {
      expect((await t.http.get('/ready')).status).toBe(200);
      markShuttingDown();
      const res = await t.http.get('/ready');
      expect(res.status).toBe(503);
      expect(res.body.message).toMatch(/shutting down/);
      expect((await t.http.get('/health')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
