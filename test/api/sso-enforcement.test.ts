import { randomBytes } from 'node:crypto';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, signUpAs as signUpVerified } from '../support/factories';
import { snapshot, snapshotDiff } from '../support/snapshot';
import { newId } from '../../src/lib/ids';
import { insertMember } from '../../src/members/store';
import type { ManualClock } from '../support/clock';
import { invitationTokenFor } from '../support/mailbox';

/**
 * SSO enforcement: password sign-in, reauthentication, sign-up and invitation acceptance for
 * e-mails of an enforcing organization's verified domains. The domain is written as verified
 * directly (DNS verification has its own tests).
 */
let t: TestApp;
const domain = `enforced-${randomBytes(4).toString('hex')}.example.com`;
let owner: { token: string; userId: string; organizationId: string; email: string };
let alice: { token: string; userId: string; email: string };
let outsider: { token: string; email: string };

const signUpAs = (email: string) => signUpVerified(t, email, email.split('@')[0]!);
const signIn = (email: string, password = PASSWORD) => t.http.post('/v1/auth/sign-in').send({ email, password });
const reauth = (token: string) => t.http.post('/v1/auth/reauthenticate').set(...bearer(token)).send({ password: PASSWORD });
const setPolicy = (token: string, enforce: boolean) => t.http.put('/v1/sso/policy').set(...bearer(token)).send({ enforce });

beforeAll(async () => {
  t = await createTestApp();
  const founder = await signUpAs(`founder@${domain}`);
  const org = await t.http.post('/v1/org').set(...bearer(founder.token)).send({ name: 'Enforcing' });
  owner = { ...founder, organizationId: org.body.item.id };
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  await t.db
    .insertInto('sso_domains')
    .values({ id: newId('ssoDomain'), organization_id: owner.organizationId, domain, status: 'verified', challenge_value: 'x', created_at: t.clock.now(), verified_at: t.clock.now() })
    .execute();
  alice = await signUpAs(`alice@${domain}`);
  await insertMember(t.db, { id: newId('member'), organizationId: owner.organizationId, userId: alice.userId, role: 'member', now: t.clock.now() });
  alice.token = (await signIn(alice.email)).body.session.token;
  outsider = await signUpAs(`outsider-${randomBytes(3).toString('hex')}@elsewhere.example.org`);
}, 120_000);
afterAll(() => t.close());

describe('PUT /v1/sso/policy', () => {
  it('turns enforcement on and off (audited); GET shows it', async () => {
    expect((await t.http.get('/v1/sso/policy').set(...bearer(owner.token))).body).toEqual({ ok: true, item: { enforce: false } });
    const on = await setPolicy(owner.token, true);
    expect([on.status, on.body]).toEqual([200, { ok: true, item: { enforce: true } }]);
    expect((await t.http.get('/v1/sso/policy').set(...bearer(owner.token))).body.item).toEqual({ enforce: true });
    const off = await setPolicy(owner.token, false);
    expect(off.body.item).toEqual({ enforce: false });
    const audit = await t.db.selectFrom('audit_logs').select(['action', 'target_id']).where('organization_id', '=', owner.organizationId).where('action', '=', 'sso_policy.updated').execute();
    expect(audit).toEqual([
      { action: 'sso_policy.updated', target_id: owner.organizationId },
      { action: 'sso_policy.updated', target_id: owner.organizationId },
    ]);
  });

  it('member 403, API key 401, plan 402 to turn it on (never to turn it off), nothing written on refusal', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    const denied = await setPolicy(member.token, true);
    expect([denied.status, denied.body.reason]).toEqual([403, 'permission_required']);
    expect((await t.http.get('/v1/sso/policy').set(...bearer(member.token))).status).toBe(403);
    const key = (await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' })).body.key;
    expect((await t.http.put('/v1/sso/policy').set('x-api-key', key).send({ enforce: true })).status).toBe(401);
    const free = await createOrganization(t, 'Free');
    const before = await snapshot(t.db);
    const refused = await setPolicy(free.token, true);
    expect([refused.status, refused.body.error]).toEqual([402, 'enterprise_plan_required']);
    expect(snapshotDiff(before, await snapshot(t.db))).toEqual([]);
    expect((await setPolicy(free.token, false)).status).toBe(200);
  });
});

describe('while enforced', () => {
  beforeAll(async () => {
    expect((await setPolicy(owner.token, true)).status).toBe(200);
  });
  afterAll(async () => {
    expect((await setPolicy(owner.token, false)).status).toBe(200);
  });

  it('password sign-in of a domain user is 403 sso_required; a wrong password stays 401; existing password sessions lose the organization', async () => {
    const refused = await signIn(alice.email);
    expect([refused.status, refused.body.error, refused.body.reason]).toEqual([403, 'forbidden', 'sso_required']);
    expect((await signIn(alice.email, 'wrong password!')).status).toBe(401);
    expect((await signIn(alice.email.toUpperCase())).body.reason).toBe('sso_required');
    expect((await t.http.get('/v1/me').set(...bearer(alice.token))).status).toBe(200);
    const cut = await t.http.get('/v1/members').set(...bearer(alice.token));
    expect([cut.status, cut.body.reason]).toEqual([403, 'sso_required']);
    expect((await t.http.get('/v1/members').set(...bearer(owner.token))).status).toBe(200);
  });

  it('reauthentication of a domain user is 403 sso_required', async () => {
    const res = await reauth(alice.token);
    expect([res.status, res.body.reason]).toEqual([403, 'sso_required']);
  });

  it('the owner keeps password sign-in and reauthentication (break-glass); other domains are untouched', async () => {
    expect((await signIn(owner.email)).status).toBe(200);
    expect((await reauth(owner.token)).status).toBe(200);
    expect((await signIn(outsider.email)).status).toBe(200);
    expect((await reauth(outsider.token)).status).toBe(200);
  });

  it('sign-up with a domain e-mail is 403 sso_required and creates nothing', async () => {
    const before = await snapshot(t.db, { exclude: ['rate_limits'] });
    const res = await t.http.post('/v1/auth/sign-up').send({ email: `newcomer@${domain.toUpperCase()}`, password: PASSWORD, name: 'New' });
    expect([res.status, res.body.reason]).toEqual([403, 'sso_required']);
    expect(snapshotDiff(before, await snapshot(t.db, { exclude: ['rate_limits'] }))).toEqual([]);
    expect((await t.http.post('/v1/auth/sign-up').send({ email: `newcomer-${randomBytes(3).toString('hex')}@other.example.org`, password: PASSWORD, name: 'New' })).status).toBe(201);
  });

  // Acceptance from SSO sessions (the enforcing organization's own connection, or another's) is
  // tested with real sign-ins in sso-oidc.test.ts.
  it('an invitation to a domain e-mail is not accepted from a password session', async () => {
    // Carol had an account (and a password session) before enforcement.
    await setPolicy(owner.token, false);
    const carol = await signUpAs(`carol@${domain}`);
    await setPolicy(owner.token, true);
    const invite = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: carol.email, role: 'member' });
    expect(invite.status).toBe(201);
    const token = await invitationTokenFor(t, carol.email);
    const before = await snapshot(t.db, { exclude: ['rate_limits'] });
    const refused = await t.http.post('/v1/invitations/accept').set(...bearer(carol.token)).send({ token });
    expect([refused.status, refused.body.reason]).toEqual([403, 'sso_required']);
    expect(snapshotDiff(before, await snapshot(t.db, { exclude: ['rate_limits'] }))).toEqual([]);
  });

  it('invitations to other e-mails are accepted from a password session', async () => {
    const invite = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: outsider.email, role: 'member' });
    expect(invite.status).toBe(201);
    const token = await invitationTokenFor(t, outsider.email);
    expect((await t.http.post('/v1/invitations/accept').set(...bearer(outsider.token)).send({ token })).status).toBe(200);
  });
});

describe('after enforcement ends', () => {
  it('password sign-in works again', async () => {
    expect((await signIn(alice.email)).status).toBe(200);
  });
});

// Last in the file: it moves the shared clock past the fresh-session window.
describe('fresh session', () => {
  it('changing the policy needs a recent sign-in', async () => {
    (t.clock as ManualClock).advance(16 * 60_000);
    const res = await setPolicy(owner.token, true);
    expect([res.status, res.body.reason]).toEqual([403, 'fresh_session_required']);
  });
});
