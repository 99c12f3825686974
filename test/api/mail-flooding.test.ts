import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, signUp, uniqueEmail } from '../support/factories';

/**
 * Mail flooding (docs/mail.md#how-much-one-address-gets): the probe that made 47 messages reach one
 * address in seconds — sign-up then delete, e-mail change requests, invitations created, cancelled
 * and resent — replayed through HTTP. Every message counts against its recipient's budget (the
 * default, 20 an hour, every kind together); past it a request that would mail the address is 429
 * and writes nothing, a notice about something already done is left unsent while the change
 * stands, and invitations are also limited per organization.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

async function queuedTo(app: TestApp, email: string): Promise<{ kind: string }[]> {
  return app.db.selectFrom('mail_messages').select('kind').where('recipient', '=', email).execute();
}

describe('one address', () => {
  it('gets at most its hourly budget however the probe mixes sign-ups, e-mail changes and invitations', async () => {
    const victim = uniqueEmail('flooded');
    const owner = await createOrganization(t, 'Flooders');
    const changers = await Promise.all([1, 2, 3, 4, 5].map((i) => signUp(t, `changer${i}`)));
    const statuses: number[] = [];
    const refusals: { status: number; headers: Record<string, string>; body: { error?: string } }[] = [];
    const note = (res: { status: number; headers: Record<string, string>; body: { error?: string } }) => {
      statuses.push(res.status);
      if (res.status === 429) refusals.push(res);
    };
    let invitationId: string | null = null;
    for (let round = 0; statuses.length < 47; round++) {
      // Sign up with the address, then delete the account (a verification link, an account-deleted notice).
      const up = await t.http.post('/v1/auth/sign-up').send({ email: victim, password: PASSWORD, name: 'Flood' });
      note(up);
      if (up.status === 201) note(await t.http.delete('/v1/me').set(...bearer(up.body.session.token)).send({ password: PASSWORD }));
      // Ask for the address as someone's new one (a confirmation link to it).
      note(await t.http.post('/v1/me/email').set(...bearer(changers[round % changers.length]!.token)).send({ email: victim }));
      // Invite it, resend, cancel (an invitation each, the next round invites again).
      const invited = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: victim, role: 'member' });
      note(invited);
      invitationId = invited.status === 201 ? invited.body.item.id : invitationId;
      if (invited.status === 201) {
        note(await t.http.post(`/v1/invitations/${invitationId}/resend`).set(...bearer(owner.token)));
        expect((await t.http.post(`/v1/invitations/${invitationId}/cancel`).set(...bearer(owner.token))).status).toBe(200);
      }
    }
    expect(await queuedTo(t, victim)).toHaveLength(20);
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      expect(refusal.body.error).toBe('rate_limited');
      expect(Number(refusal.headers['retry-after'])).toBeGreaterThan(0);
    }
    // A refused sign-up wrote nothing: no account holds the address now.
    expect(await t.db.selectFrom('users').select('id').where('email', '=', victim).execute()).toEqual([]);
    // Another address is untouched by the first one's budget.
    expect((await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: uniqueEmail('other'), role: 'member' })).status).toBe(201);
  });

  it('leaves a notice unsent past the budget, and the change it tells of stands', async () => {
    const owner = await createOrganization(t, 'Inviters');
    const user = await signUp(t, 'noticed');
    // Fill the user's budget with invitations (its verification message was the first).
    for (let sent = (await queuedTo(t, user.email)).length; sent < 20; sent++) {
      const invited = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: user.email, role: 'member' });
      expect(invited.status).toBe(201);
      expect((await t.http.post(`/v1/invitations/${invited.body.item.id}/cancel`).set(...bearer(owner.token))).status).toBe(200);
    }
    expect((await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: user.email, role: 'member' })).status).toBe(429);
    const changed = await t.http.post('/v1/me/password').set(...bearer(user.token)).send({ currentPassword: PASSWORD, newPassword: 'a fresh passphrase 42' });
    expect(changed.status).toBe(200);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: 'a fresh passphrase 42' })).status).toBe(200);
    expect((await queuedTo(t, user.email)).filter((m) => m.kind === 'password_changed')).toEqual([]);
  });
});

describe('invitations of one organization', () => {
  it('are limited per organization, created and resent together', async () => {
    const small = await createTestApp({ env: { RATE_LIMIT_INVITATION_ORG: '4/1h' } });
    try {
      const owner = await createOrganization(small, 'Bulk');
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await small.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: uniqueEmail(`bulk${i}`), role: 'member' });
        expect(res.status).toBe(201);
        ids.push(res.body.item.id);
      }
      expect((await small.http.post(`/v1/invitations/${ids[0]}/resend`).set(...bearer(owner.token))).status).toBe(202);
      const over = await small.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: uniqueEmail('bulk-over'), role: 'member' });
      expect(over.status).toBe(429);
      expect(over.body.error).toBe('rate_limited');
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      expect((await small.http.post(`/v1/invitations/${ids[1]}/resend`).set(...bearer(owner.token))).status).toBe(429);
      // Another organization has its own count.
      const other = await createOrganization(small, 'Other');
      expect((await small.http.post('/v1/invitations').set(...bearer(other.token)).send({ email: uniqueEmail('elsewhere'), role: 'member' })).status).toBe(201);
    } finally {
      await small.close();
    }
  });
});
