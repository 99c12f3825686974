import { createTestApp, LOCAL_FAKES, type TestApp } from '../support/app';
import { addMember, bearer, signUp, PASSWORD } from '../support/factories';
import { ManualClock } from '../support/clock';
import { OidcIdp } from '../fakes/oidc-idp';
import { snapshot, snapshotDiff } from '../support/snapshot';
import { callback, counts, exchange, IDP_CLIENT, idpAccount, loginAt, RETURN_ORIGIN, signInAt, SSO_ENV, ssoOrganization, verifyDomain } from '../support/sso-signin';
import { invitationTokenFor } from '../support/mailbox';
import { insertMember } from '../../src/members/store';
import { newId } from '../../src/lib/ids';

/**
 * OIDC sign-in end to end through the HTTP API against oidc-provider (docs/sso.md#signing-in):
 * sessions and one-time codes, just-in-time members with mapped roles, mappings applied again,
 * the owner left alone, e-mail rules. Refusals of the protocol: sso-oidc-refusals.test.ts.
 */
let t: TestApp;
let idp: OidcIdp;
let clock: ManualClock;

beforeAll(async () => {
  idp = await OidcIdp.start({ clients: [IDP_CLIENT], accounts: {} });
  clock = new ManualClock(new Date());
  t = await createTestApp({ clock, env: { ...LOCAL_FAKES, ...SSO_ENV } });
});
afterAll(async () => {
  await t?.close();
  await idp?.stop();
});

const MAPPINGS = { roleMappings: [{ group: 'admins', role: 'admin' }], defaultRole: 'member' };

async function orgView(token: string) {
  const res = await t.http.get('/v1/org').set(...bearer(token));
  expect(res.status).toBe(200);
  return res.body as { organization: { id: string }; currentMember: { id: string; role: string } };
}

test('sign-in without returnTo: a session in the connection organization, marked SSO, with a just-in-time member', async () => {
  const org = await ssoOrganization(t, idp, MAPPINGS);
  const sub = idpAccount(idp, { email: `alice@${org.domain}`, groups: ['engineering', 'admins'], name: 'Alice' });
  const back = await loginAt(t, idp, { email: `anyone@${org.domain}` }, sub);
  const res = await callback(t, back);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ ok: true, user: { email: `alice@${org.domain}`, name: 'Alice' }, session: { token: expect.stringMatching(/^cps_/) } });

  const view = await orgView(res.body.session.token);
  expect(view.organization.id).toBe(org.owner.organizationId);
  expect(view.currentMember.role).toBe('admin');
  const session = await t.db
    .selectFrom('sessions')
    .select(['auth_method', 'sso_connection_id', 'active_organization_id', 'second_factor', 'ip', 'last_used_at'])
    .where('user_id', '=', res.body.user.id)
    .executeTakeFirstOrThrow();
  expect(session).toEqual({
    auth_method: 'sso',
    sso_connection_id: org.connectionId,
    active_organization_id: org.owner.organizationId,
    second_factor: null,
    ip: expect.stringMatching(/\S/),
    // GET /v1/org above used it.
    last_used_at: expect.any(Date),
  });
  const identity = await t.db.selectFrom('sso_identities').select(['subject', 'user_id']).where('connection_id', '=', org.connectionId).executeTakeFirstOrThrow();
  expect(identity).toEqual({ subject: sub, user_id: res.body.user.id });
  const audit = await t.db.selectFrom('audit_logs').select(['action', 'target_id']).where('organization_id', '=', org.owner.organizationId).where('action', '=', 'member.provisioned').execute();
  expect(audit).toEqual([{ action: 'member.provisioned', target_id: view.currentMember.id }]);
});

test('sign-in with returnTo: 302 with a one-time code that works once, and not after 60 s', async () => {
  const org = await ssoOrganization(t, idp);
  const sub = idpAccount(idp, { email: `bob@${org.domain}`, groups: [] });
  const returnTo = `${RETURN_ORIGIN}/after-login?tab=home`;
  const started = await signInAt(t, idp, { connectionId: org.connectionId, returnTo }, sub);
  expect(started.verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const res = await callback(t, started.back);
  expect(res.status).toBe(302);
  const location = new URL(res.headers.location!);
  expect(location.origin + location.pathname).toBe(`${RETURN_ORIGIN}/after-login`);
  expect(location.searchParams.get('tab')).toBe('home');
  const code = location.searchParams.get('code')!;
  expect(code).toMatch(/^cpx_/);
  expect(await t.db.selectFrom('sessions').select('id').where('sso_connection_id', '=', org.connectionId).execute()).toEqual([]);

  const exchanged = await exchange(t, code, started.verifier);
  expect(exchanged.status).toBe(200);
  expect(exchanged.body).toMatchObject({ ok: true, user: { email: `bob@${org.domain}` }, session: { token: expect.stringMatching(/^cps_/) } });
  expect((await orgView(exchanged.body.session.token)).currentMember.role).toBe('member');
  const again = await exchange(t, code, started.verifier);
  expect(again.status).toBe(400);
  expect(again.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'code'] }] });

  const lateStart = await signInAt(t, idp, { connectionId: org.connectionId, returnTo }, sub);
  const lateCode = new URL((await callback(t, lateStart.back)).headers.location!).searchParams.get('code')!;
  clock.advance(61_000);
  const expired = await exchange(t, lateCode, lateStart.verifier);
  expect(expired.status).toBe(400);
  expect(expired.body.details[0].path).toEqual(['body', 'code']);
});

test("login CSRF: a victim's client completing an attacker's sign-in cannot exchange its code (RFC 9700 §4.7)", async () => {
  const org = await ssoOrganization(t, idp);
  const returnTo = `${RETURN_ORIGIN}/after-login`;
  // The attacker signs in as themself and stops before the exchange: the callback URL is the lure.
  const attacker = await signInAt(t, idp, { connectionId: org.connectionId, returnTo }, idpAccount(idp, { email: `mallory@${org.domain}`, groups: [] }));
  // The victim's client started its own sign-in (so it holds a verifier), then the victim's
  // browser opens the attacker's callback URL, and the client receives the attacker's code.
  const victimStart = await t.http.post('/v1/auth/sso/start').send({ connectionId: org.connectionId, returnTo });
  expect(victimStart.body.verifier).not.toBe(attacker.verifier);
  const lured = await callback(t, attacker.back);
  expect(lured.status).toBe(302);
  const code = new URL(lured.headers.location!).searchParams.get('code')!;
  const before = await t.db.selectFrom('sessions').select('id').execute();

  const refused = await exchange(t, code, victimStart.body.verifier);
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'code'] }] });
  // Without a verifier the exchange is malformed.
  const bare = await t.http.post('/v1/auth/sso/exchange').send({ code });
  expect(bare.status).toBe(400);
  expect(bare.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: ['body', 'verifier'] })]));
  expect(await t.db.selectFrom('sessions').select('id').execute()).toHaveLength(before.length);
  // The code stays bound to the client that started it.
  const own = await exchange(t, code, attacker.verifier);
  expect(own.status).toBe(200);
  expect(own.body.user.email).toBe(`mallory@${org.domain}`);
});

test('mappings are applied again at each sign-in, and never to the owner', async () => {
  const org = await ssoOrganization(t, idp, MAPPINGS);
  const sub = idpAccount(idp, { email: `carol@${org.domain}`, groups: ['admins'] });
  const first = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, sub));
  expect((await orgView(first.body.session.token)).currentMember.role).toBe('admin');

  idp.accounts[sub]!.groups = ['engineering'];
  const second = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, sub));
  expect(second.status).toBe(200);
  expect(second.body.user.id).toBe(first.body.user.id);
  expect((await orgView(second.body.session.token)).currentMember.role).toBe('member');
  const changes = await t.db.selectFrom('audit_logs').select('changes').where('organization_id', '=', org.owner.organizationId).where('action', '=', 'member.role_changed').execute();
  expect(changes.map((c) => (c.changes as { role: unknown }).role)).toEqual([{ from: 'admin', to: 'member' }]);

  // The owner signs in through SSO with an e-mail of the domain: still the owner.
  await t.db.updateTable('users').set({ email: `owner@${org.domain}`, email_normalized: `owner@${org.domain}` }).where('id', '=', org.owner.userId).execute();
  const ownerSub = idpAccount(idp, { email: `owner@${org.domain}`, groups: ['admins'] });
  const owner = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, ownerSub));
  expect(owner.status).toBe(200);
  expect(owner.body.user.id).toBe(org.owner.userId);
  expect((await orgView(owner.body.session.token)).currentMember.role).toBe('owner');
});

test('a first sign-in links the existing account of that e-mail; later the subject decides, not the e-mail', async () => {
  const org = await ssoOrganization(t, idp);
  const existing = await t.http.post('/v1/auth/sign-up').send({ email: `dave@${org.domain}`, password: PASSWORD, name: 'Dave' });
  const sub = idpAccount(idp, { email: `dave@${org.domain}` });
  const res = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, sub));
  expect(res.body.user.id).toBe(existing.body.user.id);

  // Another subject with an e-mail of the same account is a different identity of the same user,
  // linked only because the domain is verified; the known subject with a changed e-mail in a
  // verified domain renames the account.
  idp.accounts[sub]!.email = `david@${org.domain}`;
  const renamed = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, sub));
  expect(renamed.status).toBe(200);
  expect(renamed.body.user).toMatchObject({ id: existing.body.user.id, email: `david@${org.domain}` });

  // Changed to an e-mail outside the verified domains: refused, and nothing changes.
  idp.accounts[sub]!.email = 'david@elsewhere.test';
  const before = await counts(t);
  const outside = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, sub));
  expect(outside.status).toBe(403);
  expect(outside.body).toMatchObject({ error: 'forbidden', reason: 'email_domain_not_verified' });
  expect(await counts(t)).toEqual(before);
  const user = await t.db.selectFrom('users').select('email').where('id', '=', existing.body.user.id).executeTakeFirstOrThrow();
  expect(user.email).toBe(`david@${org.domain}`);
});

test('e-mail outside the verified domains, or no e-mail at all: 403 and nothing created', async () => {
  const org = await ssoOrganization(t, idp);
  for (const account of [{ email: 'mallory@unverified.test', groups: ['admins'] }, { groups: ['admins'] }]) {
    const sub = idpAccount(idp, account);
    const back = await loginAt(t, idp, { connectionId: org.connectionId }, sub);
    const before = await counts(t);
    const res = await callback(t, back);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'forbidden', reason: 'email_domain_not_verified' });
    expect(await counts(t)).toEqual(before);
  }
  // With returnTo the refusal goes back to the client application.
  const sub = idpAccount(idp, { email: 'mallory@unverified.test' });
  const res = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId, returnTo: `${RETURN_ORIGIN}/x` }, sub));
  expect(res.status).toBe(302);
  expect(new URL(res.headers.location!).searchParams.get('error')).toBe('email_domain_not_verified');
  expect(new URL(res.headers.location!).searchParams.get('code')).toBeNull();
});

test('the plan member limit is checked inside the sign-in transaction', async () => {
  const org = await ssoOrganization(t, idp);
  await t.db.updateTable('organizations').set({ plan: 'free' }).where('id', '=', org.owner.organizationId).execute();
  for (let i = 0; i < 4; i++) await addMember(t, org.owner.organizationId);
  const sub = idpAccount(idp, { email: `erin@${org.domain}` });
  const back = await loginAt(t, idp, { connectionId: org.connectionId }, sub);
  const before = await counts(t);
  const res = await callback(t, back);
  expect(res.status).toBe(402);
  expect(res.body).toMatchObject({ error: 'plan_limit_reached', limit: 'members' });
  expect(await counts(t)).toEqual(before);
});

test('a member signs in again without a new membership; a password user of another domain is untouched', async () => {
  const org = await ssoOrganization(t, idp);
  const other = await signUp(t, 'bystander');
  const sub = idpAccount(idp, { email: `frank@${org.domain}` });
  const one = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, sub));
  const two = await callback(t, await loginAt(t, idp, { connectionId: org.connectionId }, sub));
  expect(two.body.user.id).toBe(one.body.user.id);
  const members = await t.db.selectFrom('members').select('id').where('organization_id', '=', org.owner.organizationId).where('user_id', '=', one.body.user.id).execute();
  expect(members).toHaveLength(1);
  expect((await t.http.post('/v1/auth/sign-in').send({ email: other.email, password: PASSWORD })).status).toBe(200);
});

test('under SSO enforcement an invitation is accepted only from an SSO session through the enforcing organization\'s own connection', async () => {
  // Alice first signed in through organization B's connection while B held her domain; B let the
  // domain go, and A verified it, enforces SSO and invites her.
  const b = await ssoOrganization(t, idp);
  const sub = idpAccount(idp, { email: `alice@${b.domain}` });
  expect((await callback(t, await loginAt(t, idp, { connectionId: b.connectionId }, sub))).status).toBe(200);
  const domains = await t.http.get('/v1/sso/domains').set(...bearer(b.owner.token));
  expect((await t.http.delete(`/v1/sso/domains/${domains.body.items[0].id}`).set(...bearer(b.owner.token))).status).toBe(204);
  const a = await ssoOrganization(t, idp);
  await verifyDomain(t, a.owner.organizationId, b.domain);
  expect((await t.http.put('/v1/sso/policy').set(...bearer(a.owner.token)).send({ enforce: true })).status).toBe(200);
  const invite = await t.http.post('/v1/invitations').set(...bearer(a.owner.token)).send({ email: `alice@${b.domain}`, role: 'member' });
  expect(invite.status).toBe(201);
  const invitationToken = await invitationTokenFor(t, `alice@${b.domain}`);

  // An SSO session through B's connection (a known subject) does not satisfy A's enforcement.
  const viaB = await callback(t, await loginAt(t, idp, { connectionId: b.connectionId }, sub));
  expect(viaB.status).toBe(200);
  const before = await snapshot(t.db, { exclude: ['rate_limits'] });
  const refused = await t.http.post('/v1/invitations/accept').set(...bearer(viaB.body.session.token)).send({ token: invitationToken });
  expect([refused.status, refused.body.error, refused.body.reason]).toEqual([403, 'forbidden', 'sso_required']);
  expect(snapshotDiff(before, await snapshot(t.db, { exclude: ['rate_limits'] }))).toEqual([]);

  // Through A's own connection: she is provisioned in A just in time; removed from A, she accepts
  // the invitation from that same session.
  const viaA = await callback(t, await loginAt(t, idp, { connectionId: a.connectionId }, sub));
  expect(viaA.status).toBe(200);
  const provisioned = await orgView(viaA.body.session.token);
  expect(provisioned.organization.id).toBe(a.owner.organizationId);
  expect((await t.http.delete(`/v1/members/${provisioned.currentMember.id}`).set(...bearer(a.owner.token))).status).toBe(204);
  const accepted = await t.http.post('/v1/invitations/accept').set(...bearer(viaA.body.session.token)).send({ token: invitationToken });
  expect(accepted.status).toBe(200);
  expect(accepted.body.member).toMatchObject({ userId: viaA.body.user.id, role: 'member' });
});

test("under SSO enforcement an organization accepts only sessions made through its own connections (the owner's excepted), at once", async () => {
  const m = await ssoOrganization(t, idp);
  const v = await ssoOrganization(t, idp);
  // Uma signs in through M's identity provider and is also a member of V.
  const viaM = await callback(t, await loginAt(t, idp, { connectionId: m.connectionId }, idpAccount(idp, { email: `uma@${m.domain}` })));
  expect(viaM.status).toBe(200);
  const uma = viaM.body.session.token as string;
  await insertMember(t.db, { id: newId('member'), organizationId: v.owner.organizationId, userId: viaM.body.user.id, role: 'admin', now: t.clock.now() });
  const password = await addMember(t, v.owner.organizationId, 'admin');
  const ownSub = idpAccount(idp, { email: `vera@${v.domain}` });
  const viaV = (await callback(t, await loginAt(t, idp, { connectionId: v.connectionId }, ownSub))).body.session.token as string;
  const status = async (token: string, path = '/v1/members') => (await t.http.get(path).set(...bearer(token))).status;
  const switchTo = (token: string, organizationId: string) => t.http.post('/v1/me/active-organization').set(...bearer(token)).send({ organizationId });

  // Before enforcement, M's session switches into V and acts there.
  expect((await switchTo(uma, v.owner.organizationId)).status).toBe(200);
  expect([await status(uma), await status(password.token), await status(viaV)]).toEqual([200, 200, 200]);

  expect((await t.http.put('/v1/sso/policy').set(...bearer(v.owner.token)).send({ enforce: true })).status).toBe(200);
  // From the next request: M's SSO session and the password session are cut off V's routes.
  const cut = await t.http.get('/v1/org').set(...bearer(uma));
  expect([cut.status, cut.body.error, cut.body.reason]).toEqual([403, 'forbidden', 'sso_required']);
  expect((await t.http.post('/v1/teams').set(...bearer(uma)).send({ name: 'Sneaky' })).body.reason).toBe('sso_required');
  expect((await t.http.get('/v1/members').set(...bearer(password.token))).body.reason).toBe('sso_required');
  // The account's own routes stay open; V's own SSO session and the owner's password session work.
  expect(await status(uma, '/v1/me')).toBe(200);
  expect([await status(viaV), await status(v.owner.token)]).toEqual([200, 200]);
  expect(await t.db.selectFrom('teams').select('id').where('organization_id', '=', v.owner.organizationId).where('name', '=', 'Sneaky').execute()).toEqual([]);

  // The session keeps working in the user's other organization, and cannot switch back into V.
  expect((await switchTo(uma, m.owner.organizationId)).status).toBe(200);
  expect(await status(uma)).toBe(200);
  const refused = await switchTo(uma, v.owner.organizationId);
  expect([refused.status, refused.body.reason]).toEqual([403, 'sso_required']);
  expect(await status(uma, '/v1/org')).toBe(200);
  expect((await orgView(uma)).organization.id).toBe(m.owner.organizationId);

  // Enforcement off: the sessions reach V again.
  expect((await t.http.put('/v1/sso/policy').set(...bearer(v.owner.token)).send({ enforce: false })).status).toBe(200);
  expect((await switchTo(uma, v.owner.organizationId)).status).toBe(200);
  expect([await status(uma), await status(password.token)]).toEqual([200, 200]);
});
