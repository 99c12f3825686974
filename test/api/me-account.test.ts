import { createTestApp, type TestApp } from '../support/app';
import { addMember, asApiKey, bearer, createOrganization, PASSWORD, signUp, type OrgOwner } from '../support/factories';
import type { ManualClock } from '../support/clock';
import { mailEnv, startMailbox, testMailer, type Mailbox } from '../support/mailbox';

/**
 * The caller's own account (docs/accounts.md#the-callers-own-account): sessions, profile and account deletion,
 * through HTTP only.
 */
let t: TestApp;
let owner: OrgOwner;
let mailbox: Mailbox;
beforeAll(async () => {
  mailbox = await startMailbox();
  t = await createTestApp({ env: mailEnv(mailbox) });
  owner = await createOrganization(t, 'Account Org');
}, 120_000);
afterAll(async () => {
  await t.close();
  await mailbox.close();
});

const clock = () => t.clock as ManualClock;

async function signIn(email: string, userAgent = 'jest-agent'): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').set('user-agent', userAgent).send({ email, password: PASSWORD });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session.token;
}

const sessionsOf = (token: string) => t.http.get('/v1/me/sessions').set(...bearer(token));

describe('GET /v1/me/sessions', () => {
  it("lists the caller's live sessions, marks the current one, and never shows a token", async () => {
    const user = await signUp(t, 'lister');
    const second = await signIn(user.email, 'Second Browser/1.0');
    const res = await sessionsOf(second);
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(2);
    const [newest, first] = res.body.items;
    expect(newest).toMatchObject({ current: true, userAgent: 'Second Browser/1.0', authMethod: 'password' });
    expect(first).toMatchObject({ current: false, authMethod: 'password' });
    expect(newest.id).toMatch(/^ses_/);
    expect(typeof newest.ip).toBe('string');
    expect(newest.lastUsedAt).toBe(newest.createdAt);
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(second);
    expect(text).not.toContain(user.token);
    // Another user's list holds none of these.
    const other = await sessionsOf(owner.token);
    expect(other.body.items.map((s: { id: string }) => s.id)).not.toContain(newest.id);
  });

  it('keeps lastUsedAt to the minute without a write per request', async () => {
    const user = await signUp(t, 'toucher');
    const created = (await sessionsOf(user.token)).body.items[0];
    clock().advance(30_000);
    expect((await sessionsOf(user.token)).body.items[0].lastUsedAt).toBe(created.createdAt);
    clock().advance(31_000);
    await sessionsOf(user.token);
    const moved = (await sessionsOf(user.token)).body.items[0].lastUsedAt;
    expect(moved).toBe(t.clock.now().toISOString());
    const row = await t.db.selectFrom('sessions').select('last_used_at').where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.last_used_at?.toISOString()).toBe(moved);
  });

  it('is refused to an API key and without credentials', async () => {
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'not a session' });
    expect(key.status).toBe(201);
    expect((await t.http.get('/v1/me/sessions').set(...asApiKey(key.body.key))).status).toBe(401);
    expect((await t.http.get('/v1/me/sessions')).status).toBe(401);
  });

  it('a session id is not a credential', async () => {
    const user = await signUp(t, 'idprobe');
    const id = (await sessionsOf(user.token)).body.items[0].id;
    expect((await t.http.get('/v1/me').set(...bearer(id))).status).toBe(401);
  });
});

describe('DELETE /v1/me/sessions/{sessionId}', () => {
  it('revokes one session at once; the others keep working', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const other = await signIn(member.email);
    const list = (await sessionsOf(member.token)).body.items as { id: string; current: boolean }[];
    const target = list.find((s) => !s.current && s.id)!;
    // `other` is the newest session: it is the one listed first besides the current.
    expect(list[0]!.current).toBe(false);
    expect((await t.http.get('/v1/me').set(...bearer(other))).status).toBe(200);
    const res = await t.http.delete(`/v1/me/sessions/${target.id}`).set(...bearer(member.token));
    expect(res.status).toBe(204);
    expect((await t.http.get('/v1/me').set(...bearer(other))).status).toBe(401);
    expect((await t.http.get('/v1/me').set(...bearer(member.token))).status).toBe(200);
    expect((await sessionsOf(member.token)).body.items.map((s: { id: string }) => s.id)).not.toContain(target.id);
    // Audited in the member's organization, naming the member and the session only.
    const log = await t.http.get('/v1/audit-logs').query({ action: 'member.session_revoked' }).set(...bearer(owner.token));
    expect(log.body.items[0]).toMatchObject({ target: { type: 'member', id: member.memberId }, changes: { sessionId: { from: target.id, to: null } } });
    // Revoked already: 404.
    expect((await t.http.delete(`/v1/me/sessions/${target.id}`).set(...bearer(member.token))).status).toBe(404);
  });

  it("another user's session is 404 and keeps working; a malformed id is 400", async () => {
    const victim = await signUp(t, 'victim');
    const victimSession = (await sessionsOf(victim.token)).body.items[0].id;
    const res = await t.http.delete(`/v1/me/sessions/${victimSession}`).set(...bearer(owner.token));
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('session_not_found');
    expect((await t.http.get('/v1/me').set(...bearer(victim.token))).status).toBe(200);
    const bad = await t.http.delete('/v1/me/sessions/not-a-session').set(...bearer(owner.token));
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['path', 'sessionId']);
  });

  it('revoking the current session signs it out', async () => {
    const user = await signUp(t, 'self');
    const id = (await sessionsOf(user.token)).body.items[0].id;
    expect((await t.http.delete(`/v1/me/sessions/${id}`).set(...bearer(user.token))).status).toBe(204);
    expect((await t.http.get('/v1/me').set(...bearer(user.token))).status).toBe(401);
  });
});

describe('POST /v1/me/sessions/revoke-others', () => {
  it('revokes every other session and keeps the current one', async () => {
    const user = await signUp(t, 'others');
    const a = await signIn(user.email);
    const b = await signIn(user.email);
    const res = await t.http.post('/v1/me/sessions/revoke-others').set(...bearer(b));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, revoked: 2 });
    expect((await t.http.get('/v1/me').set(...bearer(a))).status).toBe(401);
    expect((await t.http.get('/v1/me').set(...bearer(user.token))).status).toBe(401);
    expect((await t.http.get('/v1/me').set(...bearer(b))).status).toBe(200);
    const again = await t.http.post('/v1/me/sessions/revoke-others').set(...bearer(b));
    expect(again.body).toEqual({ ok: true, revoked: 0 });
    expect((await sessionsOf(b)).body.items).toHaveLength(1);
  });
});

describe('PATCH /v1/me', () => {
  it('changes the name and picture, keeps what is left out, and audits it in each organization', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const res = await t.http.patch('/v1/me').set(...bearer(member.token)).send({ name: 'Ada Lovelace', image: 'https://img.example.test/ada.png' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, user: { id: member.userId, email: member.email, name: 'Ada Lovelace', image: 'https://img.example.test/ada.png' } });
    const renamed = await t.http.patch('/v1/me').set(...bearer(member.token)).send({ name: 'Ada King' });
    expect(renamed.body.user).toMatchObject({ name: 'Ada King', image: 'https://img.example.test/ada.png' });
    const me = await t.http.get('/v1/me').set(...bearer(member.token));
    expect(me.body.user).toMatchObject({ name: 'Ada King', image: 'https://img.example.test/ada.png' });
    const members = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(members.body.items.find((m: { id: string }) => m.id === member.memberId).user).toMatchObject({ name: 'Ada King' });
    const cleared = await t.http.patch('/v1/me').set(...bearer(member.token)).send({ image: null });
    expect(cleared.body.user.image).toBeNull();
    const log = await t.http.get('/v1/audit-logs').query({ action: 'member.profile_updated', targetId: member.memberId }).set(...bearer(owner.token));
    expect(log.body.items.map((e: { changes: object }) => e.changes)).toEqual([
      { image: { from: 'https://img.example.test/ada.png', to: null } },
      { name: { from: 'Ada Lovelace', to: 'Ada King' } },
      { name: { from: 'member', to: 'Ada Lovelace' }, image: { from: null, to: 'https://img.example.test/ada.png' } },
    ]);
    // The same values again change nothing and write no entry.
    await t.http.patch('/v1/me').set(...bearer(member.token)).send({ name: 'Ada King' });
    expect((await t.http.get('/v1/audit-logs').query({ action: 'member.profile_updated', targetId: member.memberId }).set(...bearer(owner.token))).body.items).toHaveLength(3);
  });

  it('refuses bad input naming the field, and an API key', async () => {
    const user = await signUp(t, 'profile-bad');
    for (const [body, path] of [
      [{ image: 'javascript:alert(1)' }, ['body', 'image']],
      [{ image: 'http://10.0.0.1/x.png' }, ['body', 'image']],
      [{ image: 'https://user:pw@img.example.test/x.png' }, ['body', 'image']],
      [{ name: '' }, ['body', 'name']],
      [{ name: 'x'.repeat(256) }, ['body', 'name']],
      [{ email: 'new@example.test' }, ['body', 'email']],
    ] as const) {
      const res = await t.http.patch('/v1/me').set(...bearer(user.token)).send(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.body.details[0].path).toEqual(path);
    }
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'no profile' });
    expect((await t.http.patch('/v1/me').set(...asApiKey(key.body.key)).send({ name: 'Key' })).status).toBe(401);
  });
});

describe('DELETE /v1/me', () => {
  const deleteMe = (token: string, body?: object) => {
    const req = t.http.delete('/v1/me').set(...bearer(token));
    return body ? req.send(body) : req;
  };

  it('ends every membership, revokes keys and sessions, deletes the account, and audits only the member id', async () => {
    const second = await createOrganization(t, 'Second Org');
    const leaving = await addMember(t, owner.organizationId, 'admin');
    // Also a member of the second organization, through an invitation followed from the mail.
    const invited = await t.http.post('/v1/invitations').set(...bearer(second.token)).send({ email: leaving.email, role: 'member' });
    expect(invited.status).toBe(201);
    await testMailer(t).runOnce();
    const invitation = await mailbox.waitFor(leaving.email, { subject: /invit/i });
    const token = new URL(/https?:\/\/\S+accept-invitation\S+/.exec(invitation.text)![0]).searchParams.get('token');
    const accepted = await t.http.post('/v1/invitations/accept').set(...bearer(leaving.token)).send({ token });
    expect(accepted.status).toBe(200);
    const secondMemberId = accepted.body.member.id as string;
    // Keys, a team and a resource of their own; another session.
    const key = await t.http.post('/v1/api-keys').set(...bearer(leaving.token)).send({ name: 'leaving key' });
    expect(key.status).toBe(201);
    const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Leavers', memberIds: [leaving.memberId] });
    expect(team.status).toBe(201);
    const marketplace = await t.http.post('/v1/marketplaces').set(...bearer(leaving.token)).send({ name: 'Left behind' });
    expect(marketplace.status).toBe(201);
    const otherSession = await signIn(leaving.email);

    const res = await deleteMe(leaving.token, { password: PASSWORD });
    expect(res.status).toBe(204);

    for (const credential of [leaving.token, otherSession, key.body.key]) expect((await t.http.get('/v1/me').set(...bearer(credential))).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').send({ email: leaving.email, password: PASSWORD })).status).toBe(401);
    const members = await t.http.get('/v1/members').set(...bearer(owner.token));
    expect(members.body.items.map((m: { id: string }) => m.id)).not.toContain(leaving.memberId);
    const secondMembers = await t.http.get('/v1/members').set(...bearer(second.token));
    expect(secondMembers.body.items.map((m: { id: string }) => m.id)).not.toContain(secondMemberId);
    const teamNow = await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token));
    expect(teamNow.body.item.memberCount).toBe(0);
    // What the member made stays the organization's.
    const kept = await t.http.get(`/v1/marketplaces/${marketplace.body.item.id}`).set(...bearer(owner.token));
    expect(kept.status).toBe(200);
    expect(kept.body.item.createdByOrgMembershipId).toBe(leaving.memberId);

    for (const [org, memberId] of [[owner, leaving.memberId], [second, secondMemberId]] as const) {
      const log = await t.http.get('/v1/audit-logs').query({ action: 'member.account_deleted' }).set(...bearer(org.token));
      expect(log.body.items).toHaveLength(1);
      const entry = log.body.items[0];
      expect(entry).toMatchObject({ organizationId: org.organizationId, actor: { type: 'member', id: null, memberId }, target: { type: 'member', id: memberId }, changes: {}, ip: null, userAgent: null });
      expect(JSON.stringify(entry)).not.toContain(leaving.email);
      expect(JSON.stringify(entry)).not.toContain(leaving.userId);
    }

    await testMailer(t).runOnce();
    await mailbox.waitFor(leaving.email, { subject: /account was deleted/ });
    // The address is free again: a new account, with nothing of the old one.
    const again = await t.http.post('/v1/auth/sign-up').send({ email: leaving.email, password: PASSWORD, name: 'New' });
    expect(again.status).toBe(201);
    expect(again.body.user.id).not.toBe(leaving.userId);
    expect((await t.http.get('/v1/me').set(...bearer(again.body.session.token))).body.organizations).toEqual([]);
  });

  it('is refused to an owner (409 owner_must_transfer), changing nothing', async () => {
    const own = await createOrganization(t, 'Owned Org');
    const res = await deleteMe(own.token, { password: PASSWORD });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('owner_must_transfer');
    expect((await t.http.get('/v1/me').set(...bearer(own.token))).status).toBe(200);
    const org = await t.http.get('/v1/org').set(...bearer(own.token));
    expect(org.body.currentMember.id).toBe(own.memberId);
  });

  it('needs the password (400 naming it, 401 when wrong) and a fresh session', async () => {
    const user = await signUp(t, 'careful');
    const missing = await deleteMe(user.token);
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].path).toEqual(['body', 'password']);
    const wrong = await deleteMe(user.token, { password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_credentials');
    const extra = await deleteMe(user.token, { password: PASSWORD, force: true });
    expect(extra.body.details[0].path).toEqual(['body', 'force']);
    clock().advance(t.settings.freshSessionMaxAgeMs + 1000);
    const stale = await deleteMe(user.token, { password: PASSWORD });
    expect(stale.status).toBe(403);
    expect(stale.body.reason).toBe('fresh_session_required');
    expect((await t.http.post('/v1/auth/reauthenticate').set(...bearer(user.token)).send({ password: PASSWORD })).status).toBe(200);
    expect((await deleteMe(user.token, { password: PASSWORD })).status).toBe(204);
    expect((await t.http.get('/v1/me').set(...bearer(user.token))).status).toBe(401);
  });

  it('an account without a password (SSO) needs only the fresh session', async () => {
    const user = await signUp(t, 'sso-only');
    await t.db.updateTable('users').set({ password_hash: null }).where('id', '=', user.userId).execute();
    expect((await deleteMe(user.token)).status).toBe(204);
    expect((await t.http.get('/v1/me').set(...bearer(user.token))).status).toBe(401);
  });
});
