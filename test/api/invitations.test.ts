import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, inviteAndAccept, PASSWORD, signUp, uniqueEmail } from '../support/factories';
import { newId } from '../../src/lib/ids';
import { sha256Hex } from '../../src/lib/crypto';
import type { ManualClock } from '../support/clock';
import { INVITATION_SUBJECT, invitationTokenFor, mailEnv, startMailbox, testMailer, type Mailbox } from '../support/mailbox';

/** Invitation tokens reach only the invitee's mailbox: every test takes them from the mailed link. */
let mailbox: Mailbox;
let t: TestApp;
beforeAll(async () => {
  mailbox = await startMailbox();
  t = await createTestApp({ env: mailEnv(mailbox) });
});
afterAll(async () => {
  await t.close();
  await mailbox.close();
});

const mailed = (email: string) => invitationTokenFor(t, email, mailbox);

const DAY = 24 * 60 * 60 * 1000;

async function invite(token: string, email: string, role = 'member') {
  return t.http.post('/v1/invitations').set(...bearer(token)).send({ email, role });
}

describe('POST /v1/invitations', () => {
  it('creates a pending invitation expiring in 7 days; its token goes only to the mailbox, stored hashed', async () => {
    const owner = await createOrganization(t);
    const email = uniqueEmail('invitee');
    const now = t.clock.now();
    const res = await invite(owner.token, email, 'admin');
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(/^inv_/),
        email,
        role: 'admin',
        status: 'pending',
        expiresAt: new Date(now.getTime() + 7 * DAY).toISOString(),
        createdAt: now.toISOString(),
        invitedByMemberId: owner.memberId,
        acceptedAt: null,
        cancelledAt: null,
        delivery: { status: 'pending', lastAttemptAt: null, lastError: null },
      },
    });
    const token = await mailed(email);
    expect(token).toMatch(/^cpi_/);
    const row = await t.db.selectFrom('invitations').select(['token_hash', 'email_normalized', 'organization_id']).where('id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ token_hash: sha256Hex(token), email_normalized: email.toLowerCase(), organization_id: owner.organizationId });
    const list = await t.http.get('/v1/invitations').set(...bearer(owner.token));
    expect(JSON.stringify(list.body)).not.toContain(token);
    expect(JSON.stringify(res.body)).not.toContain(token);
  });

  it('refuses a second pending invitation (case-insensitive) and an existing member', async () => {
    const owner = await createOrganization(t);
    const email = uniqueEmail('twice');
    expect((await invite(owner.token, email)).status).toBe(201);
    const again = await invite(owner.token, email.toUpperCase());
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'invitation_pending', message: expect.any(String) });
    const member = await addMember(t, owner.organizationId);
    const existing = await invite(owner.token, member.email.toUpperCase());
    expect(existing.status).toBe(409);
    expect(existing.body.error).toBe('already_member');
  });

  it('replaces an expired pending invitation', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t);
    const email = uniqueEmail('late');
    const first = await invite(owner.token, email);
    clock.advance(7 * DAY + 1000);
    const second = await invite(owner.token, email);
    expect(second.status).toBe(201);
    const list = await t.http.get('/v1/invitations').set(...bearer(owner.token));
    const byId = Object.fromEntries(list.body.items.map((i: { id: string; status: string }) => [i.id, i.status]));
    expect(byId).toEqual({ [first.body.item.id]: 'cancelled', [second.body.item.id]: 'pending' });
  });

  it('needs an admin (403), credentials (401), and a valid body (400)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const denied = await invite(member.token, uniqueEmail());
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    expect((await t.http.post('/v1/invitations').send({ email: uniqueEmail(), role: 'member' })).status).toBe(401);
    const badEmail = await invite(owner.token, 'not-an-email');
    expect(badEmail.status).toBe(400);
    expect(badEmail.body.details[0].path).toEqual(['body', 'email']);
    const ownerRole = await invite(owner.token, uniqueEmail(), 'owner');
    expect(ownerRole.status).toBe(400);
    expect(ownerRole.body.details[0].path).toEqual(['body', 'role']);
  });
});

describe('GET /v1/invitations and cancel', () => {
  it('lists newest first, marks expired ones, and pages', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t);
    const old = await invite(owner.token, uniqueEmail('old'));
    clock.advance(1000);
    const fresh = await invite(owner.token, uniqueEmail('fresh'));
    const page1 = await t.http.get('/v1/invitations?limit=1').set(...bearer(owner.token));
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((i: { id: string }) => i.id)).toEqual([fresh.body.item.id]);
    const page2 = await t.http.get('/v1/invitations').query({ limit: 1, cursor: page1.body.nextCursor }).set(...bearer(owner.token));
    expect(page2.body).toEqual({ items: [expect.objectContaining({ id: old.body.item.id, status: 'pending' })], nextCursor: null });
    clock.advance(7 * DAY - 500);
    const later = await t.http.get('/v1/invitations').set(...bearer(owner.token));
    expect(later.body.items.map((i: { status: string }) => i.status)).toEqual(['pending', 'expired']);
  });

  it('cancels a pending invitation once; its token stops working', async () => {
    const owner = await createOrganization(t);
    const user = await signUp(t, 'cancelled');
    const inv = await invite(owner.token, user.email);
    const res = await t.http.post(`/v1/invitations/${inv.body.item.id}/cancel`).set(...bearer(owner.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, item: expect.objectContaining({ id: inv.body.item.id, status: 'cancelled', cancelledAt: t.clock.now().toISOString() }) });
    const again = await t.http.post(`/v1/invitations/${inv.body.item.id}/cancel`).set(...bearer(owner.token));
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('invitation_not_pending');
    const accept = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token: await mailed(user.email) });
    expect(accept.status).toBe(409);
    expect(accept.body.error).toBe('invitation_not_pending');
  });

  it('needs an admin to list or cancel (403) and credentials (401)', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const inv = await invite(owner.token, uniqueEmail());
    const list = await t.http.get('/v1/invitations').set(...bearer(member.token));
    expect(list.status).toBe(403);
    expect(list.body.reason).toBe('org_admin_required');
    const cancel = await t.http.post(`/v1/invitations/${inv.body.item.id}/cancel`).set(...bearer(member.token));
    expect(cancel.status).toBe(403);
    expect(cancel.body.reason).toBe('org_admin_required');
    expect((await t.http.get('/v1/invitations')).status).toBe(401);
    expect((await t.http.post(`/v1/invitations/${inv.body.item.id}/cancel`)).status).toBe(401);
  });

  it('answers 404 for another organization\'s invitation and leaves it pending; 400 for a bad id', async () => {
    const a = await createOrganization(t);
    const b = await createOrganization(t);
    const inv = await invite(a.token, uniqueEmail());
    const cross = await t.http.post(`/v1/invitations/${inv.body.item.id}/cancel`).set(...bearer(b.token));
    expect(cross.status).toBe(404);
    expect(cross.body.error).toBe('invitation_not_found');
    const row = await t.db.selectFrom('invitations').select('status').where('id', '=', inv.body.item.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('pending');
    expect((await t.http.get('/v1/invitations').set(...bearer(b.token))).body.items).toEqual([]);
    expect((await t.http.post(`/v1/invitations/${newId('invitation')}/cancel`).set(...bearer(b.token))).status).toBe(404);
    const bad = await t.http.post('/v1/invitations/tem_01h/cancel').set(...bearer(b.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'invitationId']);
  });
});

describe('POST /v1/invitations/accept', () => {
  it('adds the member with the invited role; a session without an organization switches to it', async () => {
    const owner = await createOrganization(t);
    const user = await signUp(t, 'joiner');
    await invite(owner.token, user.email.toUpperCase(), 'admin');
    const token = await mailed(user.email);
    const res = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      member: {
        id: expect.stringMatching(/^om_/),
        organizationId: owner.organizationId,
        type: 'user',
        userId: user.userId,
        serviceAccountId: null,
        role: 'admin',
        status: 'active',
        createdAt: t.clock.now().toISOString(),
        user: { id: user.userId, name: 'joiner', email: user.email, image: null },
        serviceAccount: null,
      },
    });
    const org = await t.http.get('/v1/org').set(...bearer(user.token));
    expect(org.status).toBe(200);
    expect(org.body.currentMember).toMatchObject({ id: res.body.member.id, role: 'admin' });
    const list = await t.http.get('/v1/invitations').set(...bearer(owner.token));
    expect(list.body.items[0]).toMatchObject({ status: 'accepted', acceptedAt: t.clock.now().toISOString() });
    const twice = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token });
    expect(twice.status).toBe(409);
    expect(twice.body.error).toBe('invitation_not_pending');
  });

  it('keeps the active organization of a session that has one', async () => {
    const home = await createOrganization(t, 'Home');
    const other = await createOrganization(t, 'Other');
    await invite(other.token, home.email);
    const res = await t.http.post('/v1/invitations/accept').set(...bearer(home.token)).send({ token: await mailed(home.email) });
    expect(res.status).toBe(200);
    const org = await t.http.get('/v1/org').set(...bearer(home.token));
    expect(org.body.organization.id).toBe(home.organizationId);
    const me = await t.http.get('/v1/me').set(...bearer(home.token));
    expect(me.body.organizations.map((o: { id: string }) => o.id).sort()).toEqual([home.organizationId, other.organizationId].sort());
  });

  it('creates exactly one member when accepts race', async () => {
    const owner = await createOrganization(t);
    const user = await signUp(t, 'racer');
    const second = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: 'correct horse battery' });
    await invite(owner.token, user.email);
    const invitationToken = await mailed(user.email);
    const results = await Promise.all(
      [user.token, second.body.session.token, user.token].map((token) => t.http.post('/v1/invitations/accept').set(...bearer(token)).send({ token: invitationToken })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error).toBe('invitation_not_pending');
    const rows = await t.db.selectFrom('members').select('id').where('organization_id', '=', owner.organizationId).where('user_id', '=', user.userId).execute();
    expect(rows).toHaveLength(1);
  });

  it('refuses another e-mail (403 email_mismatch), unknown tokens (404), expired ones (410)', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t);
    const invited = await signUp(t, 'invited');
    const stranger = await signUp(t, 'stranger');
    await invite(owner.token, invited.email);
    const token = await mailed(invited.email);
    const mismatch = await t.http.post('/v1/invitations/accept').set(...bearer(stranger.token)).send({ token });
    expect(mismatch.status).toBe(403);
    expect(mismatch.body).toEqual({ error: 'forbidden', reason: 'email_mismatch', message: expect.any(String) });
    const unknown = await t.http.post('/v1/invitations/accept').set(...bearer(invited.token)).send({ token: 'cpi_unknown' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('invitation_not_found');
    clock.advance(7 * DAY);
    const expired = await t.http.post('/v1/invitations/accept').set(...bearer(invited.token)).send({ token });
    expect(expired.status).toBe(410);
    expect(expired.body).toEqual({ error: 'invitation_expired', message: expect.any(String) });
    expect((await t.http.get('/v1/org').set(...bearer(invited.token))).status).toBe(404);
  });

  it('answers already_member when the user joined meanwhile', async () => {
    const owner = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const email = member.email;
    // An invitation row for a member (created before they joined another way).
    const placeholder = uniqueEmail('placeholder');
    const inv = await invite(owner.token, placeholder);
    const token = await mailed(placeholder);
    await t.db.updateTable('invitations').set({ email, email_normalized: email.toLowerCase() }).where('id', '=', inv.body.item.id).execute();
    const res = await t.http.post('/v1/invitations/accept').set(...bearer(member.token)).send({ token });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('already_member');
    const rows = await t.db.selectFrom('members').select('id').where('organization_id', '=', owner.organizationId).where('user_id', '=', member.userId).execute();
    expect(rows).toHaveLength(1);
  });

  it('refuses an API key or a dead session (401), whatever the body, and validates the body', async () => {
    const owner = await createOrganization(t);
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' });
    const email = uniqueEmail();
    await invite(owner.token, email);
    const token = await mailed(email);
    const withKey = await t.http.post('/v1/invitations/accept').set('x-api-key', key.body.key).send({ token, name: 'Key', password: PASSWORD });
    expect(withKey.status).toBe(401);
    const dead = await t.http.post('/v1/invitations/accept').set(...bearer('cps_expired_or_made_up')).send({ token, name: 'Dead', password: PASSWORD });
    expect(dead.status).toBe(401);
    const empty = await t.http.post('/v1/invitations/accept').set(...bearer(owner.token)).send({});
    expect(empty.status).toBe(400);
    expect(empty.body.details[0].path).toEqual(['body', 'token']);
    // Still pending: nothing above used it.
    expect((await t.http.get('/v1/invitations/preview').query({ token })).status).toBe(200);
  });

  it('lets a removed member be invited again (factory inviteAndAccept)', async () => {
    const owner = await createOrganization(t);
    const joined = await inviteAndAccept(t, owner.token, 'member', mailbox);
    expect((await t.http.delete(`/v1/members/${joined.memberId}`).set(...bearer(owner.token))).status).toBe(204);
    const inv = await invite(owner.token, joined.email);
    expect(inv.status).toBe(201);
    const res = await t.http.post('/v1/invitations/accept').set(...bearer(joined.token)).send({ token: await mailed(joined.email) });
    expect(res.status).toBe(200);
    expect(res.body.member.id).not.toBe(joined.memberId);
    expect((await t.http.get('/v1/org').set(...bearer(joined.token))).status).toBe(200);
  });
});

describe('delivery, resend, preview', () => {
  const list = async (owner: { token: string }) => (await t.http.get('/v1/invitations').set(...bearer(owner.token))).body.items as { id: string; delivery: unknown; expiresAt: string }[];

  it('shows the delivery of the latest message: pending, then sent, or the mail server\'s error', async () => {
    const owner = await createOrganization(t);
    const email = uniqueEmail('delivered');
    const created = await invite(owner.token, email);
    expect(created.body.item.delivery).toEqual({ status: 'pending', lastAttemptAt: null, lastError: null });
    await mailed(email);
    const [sent] = await list(owner);
    expect(sent!.delivery).toEqual({ status: 'sent', lastAttemptAt: t.clock.now().toISOString(), lastError: null });

    const refused = uniqueEmail('refused');
    await invite(owner.token, refused);
    mailbox.mode = 'refuse';
    try {
      const runner = testMailer(t);
      await runner.runOnce();
      await runner.stop();
    } finally {
      mailbox.mode = 'accept';
    }
    const [failing] = await list(owner);
    expect(failing!.delivery).toEqual({ status: 'pending', lastAttemptAt: t.clock.now().toISOString(), lastError: expect.stringContaining('554') });
  });

  it('resend mails a new token (the old one dies), renews the expiry and shows the new message', async () => {
    const clock = t.clock as ManualClock;
    const owner = await createOrganization(t, 'Resenders');
    const user = await signUp(t, 'resent');
    const inv = await invite(owner.token, user.email);
    const first = await mailed(user.email);
    clock.advance(6 * DAY);
    const res = await t.http.post(`/v1/invitations/${inv.body.item.id}/resend`).set(...bearer(owner.token));
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      ok: true,
      item: expect.objectContaining({ id: inv.body.item.id, status: 'pending', expiresAt: new Date(clock.now().getTime() + 7 * DAY).toISOString(), delivery: { status: 'pending', lastAttemptAt: null, lastError: null } }),
    });
    const second = await mailed(user.email);
    expect(mailbox.to(user.email).filter((m) => INVITATION_SUBJECT.test(m.subject))).toHaveLength(2);
    expect(second).not.toBe(first);
    // Past the first expiry, the renewed invitation still works, with the new token only.
    clock.advance(2 * DAY);
    const old = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token: first });
    expect([old.status, old.body.error]).toEqual([404, 'invitation_not_found']);
    expect((await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token: second })).status).toBe(200);
    const audit = await t.http.get('/v1/audit-logs').query({ action: 'invitation.resent' }).set(...bearer(owner.token));
    expect(audit.body.items).toEqual([expect.objectContaining({ target: { type: 'invitation', id: inv.body.item.id } })]);

    const after = await t.http.post(`/v1/invitations/${inv.body.item.id}/resend`).set(...bearer(owner.token));
    expect([after.status, after.body.error]).toEqual([409, 'invitation_not_pending']);
  });

  it('resend needs an admin of the organization (403, 404 elsewhere) and is rate limited per invitation', async () => {
    const owner = await createOrganization(t);
    const other = await createOrganization(t);
    const member = await addMember(t, owner.organizationId);
    const inv = await invite(owner.token, uniqueEmail('limited'));
    const url = `/v1/invitations/${inv.body.item.id}/resend`;
    expect((await t.http.post(url).set(...bearer(member.token))).body.reason).toBe('org_admin_required');
    expect((await t.http.post(url).set(...bearer(other.token))).status).toBe(404);
    expect((await t.http.post(`/v1/invitations/${newId('invitation')}/resend`).set(...bearer(owner.token))).status).toBe(404);
    for (let i = 0; i < 5; i++) expect((await t.http.post(url).set(...bearer(owner.token))).status).toBe(202);
    const limited = await t.http.post(url).set(...bearer(owner.token));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Another invitation has its own allowance.
    const another = await invite(owner.token, uniqueEmail('other'));
    expect((await t.http.post(`/v1/invitations/${another.body.item.id}/resend`).set(...bearer(owner.token))).status).toBe(202);
  });

  it('preview shows what a link offers, without credentials; one answer for a dead token', async () => {
    const owner = await createOrganization(t, 'Preview & Co');
    await t.db.updateTable('users').set({ name: 'Pat Owner' }).where('id', '=', owner.userId).execute();
    const email = uniqueEmail('previewed');
    const inv = await invite(owner.token, email, 'admin');
    const token = await mailed(email);
    const res = await t.http.get('/v1/invitations/preview').query({ token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ organization: { name: 'Preview & Co' }, inviter: { name: 'Pat Owner' }, email, role: 'admin', expiresAt: inv.body.item.expiresAt });

    const missing = await t.http.get('/v1/invitations/preview');
    expect(missing.body.details[0].path).toEqual(['query', 'token']);
    const unknown = await t.http.get('/v1/invitations/preview').query({ token: 'cpi_unknown' });
    expect([unknown.status, unknown.body.error]).toEqual([400, 'invalid_token']);
    await t.http.post(`/v1/invitations/${inv.body.item.id}/cancel`).set(...bearer(owner.token));
    const cancelled = await t.http.get('/v1/invitations/preview').query({ token });
    expect([cancelled.status, cancelled.body.error]).toEqual([400, 'invalid_token']);
  });
});

describe('GET /v1/me/invitations', () => {
  it('lists pending invitations to the caller\'s address from every organization, nothing else', async () => {
    const user = await signUp(t, 'wanted');
    const a = await createOrganization(t, 'Org A');
    const b = await createOrganization(t, 'Org B');
    const c = await createOrganization(t, 'Org C');
    const fromA = await invite(a.token, user.email);
    (t.clock as ManualClock).advance(1000);
    const fromB = await invite(b.token, user.email.toUpperCase(), 'admin');
    const fromC = await invite(c.token, user.email);
    await t.http.post(`/v1/invitations/${fromC.body.item.id}/cancel`).set(...bearer(c.token));
    await invite(a.token, uniqueEmail('someone-else'));

    const res = await t.http.get('/v1/me/invitations').set(...bearer(user.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      items: [
        { id: fromB.body.item.id, organization: { id: b.organizationId, name: 'Org B' }, inviter: { name: 'owner' }, email: user.email.toUpperCase(), role: 'admin', expiresAt: fromB.body.item.expiresAt, createdAt: fromB.body.item.createdAt },
        { id: fromA.body.item.id, organization: { id: a.organizationId, name: 'Org A' }, inviter: { name: 'owner' }, email: user.email, role: 'member', expiresAt: fromA.body.item.expiresAt, createdAt: fromA.body.item.createdAt },
      ],
      nextCursor: null,
    });
    const page = await t.http.get('/v1/me/invitations').query({ limit: 1 }).set(...bearer(user.token));
    expect(page.body.items.map((i: { id: string }) => i.id)).toEqual([fromB.body.item.id]);
    const rest = await t.http.get('/v1/me/invitations').query({ limit: 1, cursor: page.body.nextCursor }).set(...bearer(user.token));
    expect(rest.body.items.map((i: { id: string }) => i.id)).toEqual([fromA.body.item.id]);
    expect((await t.http.get('/v1/me/invitations').set(...bearer(a.token))).body.items).toEqual([]);
    expect((await t.http.get('/v1/me/invitations')).status).toBe(401);
  });
});

describe('POST /v1/invitations/accept without a session', () => {
  const acceptAnonymously = (body: object) => t.http.post('/v1/invitations/accept').send(body);

  it('creates the account for the invited address, its membership and a session (201)', async () => {
    const owner = await createOrganization(t, 'Newcomers Inc');
    const email = uniqueEmail('Newcomer');
    const inv = await invite(owner.token, email, 'admin');
    const token = await mailed(email);
    const res = await acceptAnonymously({ token, name: 'Nia Newcomer', password: PASSWORD });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      user: expect.objectContaining({ id: expect.stringMatching(/^usr_/), email, name: 'Nia Newcomer' }),
      member: expect.objectContaining({ organizationId: owner.organizationId, role: 'admin', status: 'active', user: expect.objectContaining({ email }) }),
      session: { token: expect.stringMatching(/^cps_/), expiresAt: expect.any(String) },
    });
    expect(JSON.stringify(res.body)).not.toContain(PASSWORD);
    // The session is in the organization and says how it was opened.
    const session = res.body.session.token as string;
    const org = await t.http.get('/v1/org').set(...bearer(session));
    expect(org.body.currentMember).toMatchObject({ id: res.body.member.id, role: 'admin' });
    const sessions = await t.http.get('/v1/me/sessions').set(...bearer(session));
    expect(sessions.body.items).toEqual([expect.objectContaining({ current: true, authMethod: 'invitation' })]);
    // The password works for signing in; the invitation is used up.
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: PASSWORD })).status).toBe(200);
    const again = await acceptAnonymously({ token, name: 'Someone', password: PASSWORD });
    expect([again.status, again.body.error]).toEqual([409, 'invitation_not_pending']);
    const audit = await t.http.get('/v1/audit-logs').query({ action: 'invitation.accepted' }).set(...bearer(owner.token));
    expect(audit.body.items).toEqual([expect.objectContaining({ actor: expect.objectContaining({ memberId: res.body.member.id }), target: { type: 'member', id: res.body.member.id } })]);
    expect(JSON.stringify(audit.body)).not.toContain(PASSWORD);
    expect((await t.http.get('/v1/invitations').set(...bearer(owner.token))).body.items[0]).toMatchObject({ id: inv.body.item.id, status: 'accepted' });
  });

  it('answers email_taken for an existing account, and leaves the invitation pending', async () => {
    const owner = await createOrganization(t);
    const existing = await signUp(t, 'existing');
    await invite(owner.token, existing.email);
    const token = await mailed(existing.email);
    const res = await acceptAnonymously({ token, name: 'Impostor', password: 'another good passphrase' });
    expect([res.status, res.body.error]).toEqual([409, 'email_taken']);
    // The owner of the address signs in and accepts with their session.
    expect((await t.http.post('/v1/invitations/accept').set(...bearer(existing.token)).send({ token })).status).toBe(200);
  });

  it('needs a name and a good password (400 naming the field); an unknown token is 404', async () => {
    const owner = await createOrganization(t);
    const email = uniqueEmail('fields');
    await invite(owner.token, email);
    const token = await mailed(email);
    expect((await acceptAnonymously({ token, password: PASSWORD })).body.details[0].path).toEqual(['body', 'name']);
    expect((await acceptAnonymously({ token, name: 'No Password' })).body.details[0].path).toEqual(['body', 'password']);
    expect((await acceptAnonymously({ token, name: 'Short', password: 'short' })).body.details[0].path).toEqual(['body', 'password']);
    const sameAsEmail = await acceptAnonymously({ token, name: 'Email', password: email });
    expect([sameAsEmail.status, sameAsEmail.body.details?.[0].path]).toEqual([400, ['body', 'password']]);
    const unknown = await acceptAnonymously({ token: 'cpi_unknown', name: 'Who', password: PASSWORD });
    expect([unknown.status, unknown.body.error]).toEqual([404, 'invitation_not_found']);
    expect((await t.http.get('/v1/invitations/preview').query({ token })).status).toBe(200);
  });
});

describe('invitations prove the address (docs/accounts.md)', () => {
  /** A sign-up through the API alone: its address is not proven (no verification link opened). */
  async function unverified(label: string) {
    const email = uniqueEmail(label);
    const res = await t.http.post('/v1/auth/sign-up').send({ email, password: PASSWORD, name: label });
    expect(res.status).toBe(201);
    return { email, token: res.body.session.token as string, userId: res.body.user.id as string };
  }
  const me = async (token: string) => (await t.http.get('/v1/me').set(...bearer(token))).body.user;

  it('accepting with a session of the invited address marks it verified', async () => {
    const owner = await createOrganization(t);
    const user = await unverified('proving');
    expect((await me(user.token)).emailVerified).toBe(false);
    await invite(owner.token, user.email);
    const res = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token: await mailed(user.email) });
    expect(res.status).toBe(200);
    expect((await me(user.token)).emailVerified).toBe(true);
  });

  it('accepting without a session takes over an unverified account of the address: the squatter\'s password and sessions end', async () => {
    const owner = await createOrganization(t, 'Victim Org');
    const squatter = await unverified('squatted');
    await invite(owner.token, squatter.email);
    const token = await mailed(squatter.email);
    const fresh = 'the real owner passphrase 3';
    const res = await t.http.post('/v1/invitations/accept').send({ token, name: 'Real Owner', password: fresh });
    expect(res.status).toBe(201);
    expect(res.body.user.id).toBe(squatter.userId);
    expect((await t.http.get('/v1/me').set(...bearer(squatter.token))).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: squatter.email, password: PASSWORD })).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: squatter.email, password: fresh })).status).toBe(200);
    expect((await me(res.body.session.token)).emailVerified).toBe(true);
    const audit = await t.http.get('/v1/audit-logs').query({ action: 'member.account_secured' }).set(...bearer(owner.token));
    expect(audit.body.items).toEqual([expect.objectContaining({ changes: expect.objectContaining({ reason: { from: null, to: 'invitation' } }) })]);
  });

  it('GET /v1/me/invitations needs a verified address', async () => {
    const owner = await createOrganization(t);
    const user = await unverified('unproven');
    await invite(owner.token, user.email);
    const res = await t.http.get('/v1/me/invitations').set(...bearer(user.token));
    expect([res.status, res.body.reason]).toEqual([403, 'email_not_verified']);
  });
});
