import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';
import { WEBHOOK_TEST_ENV } from '../support/webhooks';

/**
 * POST /v1/invitations writes the invitation, its message, the audit entry and its event (with its
 * deliveries) in one statement; an organization with more matching webhook endpoints than that
 * statement carries delivery ids for gets the same rows through a transaction.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: WEBHOOK_TEST_ENV });
});
afterAll(() => t.close());

async function rowsOf(invitationId: string) {
  const invitation = await sql<{ status: string; mail_message_id: string | null }>`SELECT status, mail_message_id FROM invitations WHERE id = ${invitationId}`.execute(t.db);
  const messages = await sql<{ kind: string; status: string }>`SELECT kind, status FROM mail_messages WHERE id = ${invitation.rows[0]?.mail_message_id ?? ''}`.execute(t.db);
  const events = await sql<{ id: string }>`SELECT id FROM events WHERE type = 'invitation.created' AND data -> 'target' ->> 'id' = ${invitationId}`.execute(t.db);
  const deliveries = events.rows[0]
    ? await sql<{ endpoint_id: string }>`SELECT endpoint_id FROM webhook_deliveries WHERE event_id = ${events.rows[0].id} ORDER BY endpoint_id`.execute(t.db)
    : { rows: [] };
  return { invitation: invitation.rows, messages: messages.rows, events: events.rows, deliveries: deliveries.rows.map((r) => r.endpoint_id) };
}

describe('POST /v1/invitations writes everything in one statement', () => {
  it('queues a delivery for every matching endpoint, also beyond the ids the statement carries (then in a transaction)', async () => {
    const owner = await createOrganization(t, 'Fan-out');
    const endpoints: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: `https://hooks.example.test/${i}`, events: i % 2 ? ['invitation.*'] : ['*'] });
      expect(res.status).toBe(201);
      endpoints.push(res.body.item.id);
    }
    const res = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: 'ten@example.com', role: 'member' });
    expect(res.status).toBe(201);
    const rows = await rowsOf(res.body.item.id);
    expect(rows.invitation).toEqual([{ status: 'pending', mail_message_id: expect.any(String) }]);
    expect(rows.messages).toEqual([{ kind: 'invitation', status: 'pending' }]);
    expect(rows.events).toHaveLength(1);
    expect(rows.deliveries).toEqual([...endpoints].sort());
    const audit = await t.http.get('/v1/audit-logs').query({ targetId: res.body.item.id }).set(...bearer(owner.token));
    expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(['invitation.created']);
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true, firstBrokenId: null });
  });

  it('keeps the audit chain whole when an organization invites at once; a refused one writes nothing', async () => {
    const owner = await createOrganization(t, 'Together');
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: `p${i}@example.com`, role: 'member' })));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(owner.token))).body).toMatchObject({ ok: true, firstBrokenId: null });

    const messagesBefore = await sql<{ n: string }>`SELECT count(*) AS n FROM mail_messages`.execute(t.db);
    const again = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: 'p0@example.com', role: 'member' });
    expect([again.status, again.body.error]).toEqual([409, 'invitation_pending']);
    const messagesAfter = await sql<{ n: string }>`SELECT count(*) AS n FROM mail_messages`.execute(t.db);
    expect(messagesAfter.rows[0]!.n).toBe(messagesBefore.rows[0]!.n);
    const audit = await t.http.get('/v1/audit-logs').query({ action: 'invitation.created' }).set(...bearer(owner.token));
    expect(audit.body.items).toHaveLength(6);
  });
});
