import { Secret, TOTP, URI } from 'otpauth';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, signUp, type SignedUpUser } from '../support/factories';
import { SoftAuthenticator } from '../support/authenticator';
import { mailEnv, startMailbox, testMailer, type Mailbox } from '../support/mailbox';
import type { ManualClock } from '../support/clock';
import { newId } from '../../src/lib/ids';
import { insertMember } from '../../src/members/store';

/**
 * Second factors (docs/second-factors.md) through HTTP. TOTP codes come from `otpauth`, an
 * implementation independent of the service's otplib; passkeys from a software authenticator
 * whose output the server library's own verify functions accept (test/mfa/authenticator.test.ts).
 */
let t: TestApp;
let clock: ManualClock;
let mailbox: Mailbox;
let mailer: ReturnType<typeof testMailer>;
const ORIGIN = 'http://localhost:3000';
beforeAll(async () => {
  mailbox = await startMailbox();
  t = await createTestApp({ env: { PUBLIC_BASE_URL: ORIGIN, ...mailEnv(mailbox) } });
  clock = t.clock as ManualClock;
  mailer = testMailer(t);
});
afterAll(async () => {
  await mailer.stop();
  await t.close();
  await mailbox.close();
});

function codeAt(secret: string, at = clock.now()): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: at.getTime() });
}

/** A second membership for an existing user (as test/support/factories.ts's addMember makes one). */
async function addExistingUser(organizationId: string, userId: string): Promise<void> {
  await insertMember(t.db, { id: newId('member'), organizationId, userId, role: 'member', now: clock.now() });
}

function nextStep(): void {
  clock.advance(30_000);
}

async function enrolTotp(user: { token: string }): Promise<{ secret: string; recoveryCodes: string[] }> {
  const start = await t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
  expect(start.status).toBe(200);
  const secret: string = start.body.secret;
  const confirm = await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(user.token)).send({ code: codeAt(secret) });
  expect(confirm.status).toBe(200);
  nextStep();
  return { secret, recoveryCodes: confirm.body.recoveryCodes };
}

async function passwordStep(user: SignedUpUser): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ ok: true, mfaRequired: true, challenge: { token: expect.stringMatching(/^mfc_/), methods: expect.any(Array), expiresAt: expect.any(String) } });
  expect(res.body.session).toBeUndefined();
  return res.body.challenge.token;
}

async function registerPasskey(user: { token: string }, authenticator = new SoftAuthenticator(ORIGIN)) {
  const options = await t.http.post('/v1/me/passkeys/options').set(...bearer(user.token));
  expect(options.status).toBe(200);
  expect(options.body.rp.id).toBe('localhost');
  const res = await t.http.post('/v1/me/passkeys').set(...bearer(user.token)).send({ name: 'Laptop', response: authenticator.create(options.body) });
  expect(res.status).toBe(201);
  return { authenticator, item: res.body.item };
}

describe('TOTP enrolment', () => {
  it('gives a secret and an otpauth URL once, confirms with the app\'s code, and returns ten recovery codes once', async () => {
    const user = await signUp(t, 'totp');
    const start = await t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
    expect(start.status).toBe(200);
    const parsed = URI.parse(start.body.otpauthUrl) as TOTP;
    expect(parsed).toBeInstanceOf(TOTP);
    expect(parsed.secret.base32).toBe(start.body.secret);
    expect(parsed.label).toBe(user.email);
    expect([parsed.algorithm, parsed.digits, parsed.period]).toEqual(['SHA1', 6, 30]);

    const wrong = await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(user.token)).send({ code: codeAt(start.body.secret, new Date(clock.now().getTime() - 120_000)) });
    expect(wrong.status).toBe(400);
    expect(wrong.body.details[0].path).toEqual(['body', 'code']);

    const confirm = await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(user.token)).send({ code: codeAt(start.body.secret) });
    expect(confirm.status).toBe(200);
    expect(confirm.body.recoveryCodes).toHaveLength(10);
    expect(new Set(confirm.body.recoveryCodes).size).toBe(10);

    const status = await t.http.get('/v1/me/mfa').set(...bearer(user.token));
    expect(status.body).toEqual({ methods: ['totp', 'recovery_code'], totp: true, passkeys: 0, recoveryCodesRemaining: 10 });
    const again = await t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
    expect(again.status).toBe(409);

    // The secret is sealed and the codes are HMACs at rest; neither appears in a log line or an audit entry.
    const row = await t.db.selectFrom('user_totp').select('secret_sealed').where('user_id', '=', user.userId).executeTakeFirstOrThrow();
    expect(row.secret_sealed).not.toContain(start.body.secret);
    const stored = await t.db.selectFrom('user_recovery_codes').select('code_hash').where('user_id', '=', user.userId).execute();
    for (const code of confirm.body.recoveryCodes as string[]) expect(stored.map((s) => s.code_hash)).not.toContain(code);
    const audit = JSON.stringify(await t.db.selectFrom('audit_logs').selectAll().execute());
    for (const secret of [start.body.secret, ...confirm.body.recoveryCodes]) {
      expect(t.logs.join('\n')).not.toContain(secret);
      expect(audit).not.toContain(secret);
    }
  });
});

describe('audit', () => {
  /** The entries of the organization since `after` (its chain position), oldest first. */
  async function entries(organizationId: string, after: number) {
    const rows = await t.db.selectFrom('audit_logs').select(['action', 'target_type', 'target_id', 'changes', 'seq']).where('organization_id', '=', organizationId).where('seq', '>', String(after)).orderBy('seq').execute();
    return rows.map((r) => ({ action: r.action, target: `${r.target_type}:${r.target_id}`, changes: r.changes }));
  }
  async function head(organizationId: string): Promise<number> {
    const row = await t.db.selectFrom('audit_logs').select((eb) => eb.fn.max('seq').as('seq')).where('organization_id', '=', organizationId).executeTakeFirst();
    return Number(row?.seq ?? 0);
  }

  it('records every enrolment, regeneration and removal in each organization of the user, and the policy change', async () => {
    const owner = await createOrganization(t, 'Audited A');
    const second = await createOrganization(t, 'Audited B');
    const memberInB = newId('member');
    await insertMember(t.db, { id: memberInB, organizationId: second.organizationId, userId: owner.userId, role: 'member', now: clock.now() });
    const [fromA, fromB] = [await head(owner.organizationId), await head(second.organizationId)];

    const { secret } = await enrolTotp(owner);
    expect((await t.http.post('/v1/me/mfa/recovery-codes').set(...bearer(owner.token))).status).toBe(200);
    const { item } = await registerPasskey(owner);
    expect((await t.http.delete(`/v1/me/passkeys/${item.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await t.http.delete('/v1/me/mfa/totp').set(...bearer(owner.token)).send({ code: codeAt(secret) })).status).toBe(204);
    const factorChanges = ['member.mfa_enrolled', 'member.mfa_regenerated', 'member.mfa_enrolled', 'member.mfa_removed', 'member.mfa_removed'];
    const inA = await entries(owner.organizationId, fromA);
    const inB = await entries(second.organizationId, fromB);
    expect(inA.map((e) => e.action)).toEqual(factorChanges);
    expect(inB.map((e) => e.action)).toEqual(factorChanges);
    // Each names the user's member of that organization, and which factor (never a secret).
    expect(new Set(inA.map((e) => e.target))).toEqual(new Set([`member:${owner.memberId}`]));
    expect(new Set(inB.map((e) => e.target))).toEqual(new Set([`member:${memberInB}`]));
    expect(inA.map((e) => (e.changes as { factor?: { to?: string } }).factor?.to)).toEqual(['totp', 'recovery_codes', 'passkey', 'passkey', 'totp']);
    expect(JSON.stringify([inA, inB])).not.toContain(secret);

    const { secret: again } = await enrolTotp(owner);
    const beforePolicy = await head(owner.organizationId);
    expect((await t.http.put('/v1/org/auth-policy').set(...bearer(owner.token)).send({ requireMfa: true })).status).toBe(200);
    expect(await entries(owner.organizationId, beforePolicy)).toEqual([
      { action: 'organization.auth_policy_updated', target: `organization:${owner.organizationId}`, changes: { requireMfa: { from: false, to: true } } },
    ]);
    // The policy is the organization's: the other organization records nothing of it.
    expect((await entries(second.organizationId, fromB)).map((e) => e.action)).toEqual([...factorChanges, 'member.mfa_enrolled']);

    // The two-step sign-in is audited once it completes, with the factor that completed it, in
    // the organization the new session starts in (one entry in all).
    const [signInA, signInB] = [await head(owner.organizationId), await head(second.organizationId)];
    const challengeToken = await passwordStep(owner);
    expect([...(await entries(owner.organizationId, signInA)), ...(await entries(second.organizationId, signInB))]).toEqual([]);
    expect((await t.http.post('/v1/auth/mfa/verify').send({ challengeToken, method: 'totp', code: codeAt(again) })).status).toBe(200);
    const signedIn = [...(await entries(owner.organizationId, signInA)), ...(await entries(second.organizationId, signInB))];
    expect(signedIn).toEqual([{ action: 'member.signed_in', target: expect.stringMatching(/^member:/), changes: { method: { from: null, to: 'totp' } } }]);
    expect([`member:${owner.memberId}`, `member:${memberInB}`]).toContain(signedIn[0]!.target);
  });
});

describe('notices by e-mail', () => {
  it('tells the user when a factor is added, a recovery code is used, and a factor is removed (no secret in the message)', async () => {
    const user = await signUp(t, 'notice');
    const { secret, recoveryCodes } = await enrolTotp(user);
    expect((await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'recovery_code', code: recoveryCodes[0] })).status).toBe(200);
    expect((await t.http.delete('/v1/me/mfa/totp').set(...bearer(user.token)).send({ code: codeAt(secret) })).status).toBe(204);
    await mailer.runOnce();
    const added = await mailbox.waitFor(user.email, { subject: /authenticator app was added/ });
    const used = await mailbox.waitFor(user.email, { subject: /recovery code was used/ });
    const removed = await mailbox.waitFor(user.email, { subject: /authenticator app was removed/ });
    for (const mail of [added, used, removed]) {
      for (const value of [secret, ...recoveryCodes]) expect(mail.raw).not.toContain(value);
    }
  });
});

describe('sign-in with a second factor', () => {
  it('answers a challenge and no session after the password, then a session for the right code', async () => {
    const user = await signUp(t, 'two-step');
    const { secret } = await enrolTotp(user);
    const token = await passwordStep(user);
    const res = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: token, method: 'totp', code: codeAt(secret) });
    expect(res.status).toBe(200);
    expect(res.body.user.id).toBe(user.userId);
    const me = await t.http.get('/v1/me').set(...bearer(res.body.session.token));
    expect(me.status).toBe(200);
    // The challenge is spent: a used challenge is a dead token, as a used link is.
    const reuse = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: token, method: 'totp', code: codeAt(secret) });
    expect({ status: reuse.status, error: reuse.body.error }).toEqual({ status: 400, error: 'invalid_token' });
  });

  it('answers an unknown challenge 400 invalid_token, on verify and on passkey options', async () => {
    const unknown = 'mfc_unknown-challenge-token-0123456789abcdefghij';
    const verify = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: unknown, method: 'totp', code: '123456' });
    expect({ status: verify.status, error: verify.body.error }).toEqual({ status: 400, error: 'invalid_token' });
    const options = await t.http.post('/v1/auth/mfa/passkey-options').send({ challengeToken: unknown });
    expect({ status: options.status, error: options.body.error }).toEqual({ status: 400, error: 'invalid_token' });
  });

  it("records the factor that completed a sign-in on the session (GET /v1/me/sessions' secondFactor)", async () => {
    const user = await signUp(t, 'factor-recorded');
    const { secret, recoveryCodes } = await enrolTotp(user);
    nextStep();
    const byTotp = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'totp', code: codeAt(secret) });
    const byRecovery = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'recovery_code', code: recoveryCodes[1] });
    const current = async (token: string) => {
      const list = await t.http.get('/v1/me/sessions').set(...bearer(token));
      expect(list.status).toBe(200);
      return list.body.items.find((s: { current: boolean }) => s.current);
    };
    expect(await current(byTotp.body.session.token)).toMatchObject({ authMethod: 'password', secondFactor: 'totp' });
    expect(await current(byRecovery.body.session.token)).toMatchObject({ authMethod: 'password', secondFactor: 'recovery_code' });
    // A session of a user without a factor records none.
    const plain = await signUp(t, 'no-factor');
    const mine = await t.http.get('/v1/me/sessions').set(...bearer(plain.token));
    expect(mine.body.items).toEqual([expect.objectContaining({ current: true, secondFactor: null })]);
  });

  it('accepts a code once: the same code on a new challenge is refused (replay)', async () => {
    const user = await signUp(t, 'replay');
    const { secret } = await enrolTotp(user);
    const code = codeAt(secret);
    expect((await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'totp', code })).status).toBe(200);
    const replay = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'totp', code });
    expect(replay.status).toBe(401);
    expect(replay.body.error).toBe('invalid_credentials');
    nextStep();
    expect((await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'totp', code: codeAt(secret) })).status).toBe(200);
  });

  it('kills a challenge after five wrong answers, even for the right code then', async () => {
    const user = await signUp(t, 'brute');
    const { secret } = await enrolTotp(user);
    const token = await passwordStep(user);
    const right = codeAt(secret);
    const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
    for (let i = 0; i < 5; i++) {
      const res = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: token, method: 'totp', code: wrong });
      expect(res.status).toBe(401);
    }
    const dead = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: token, method: 'totp', code: right });
    expect({ status: dead.status, error: dead.body.error }).toEqual({ status: 400, error: 'invalid_token' });
  });

  it('does not let one user\'s challenge be answered with another user\'s factor', async () => {
    const victim = await signUp(t, 'victim');
    await enrolTotp(victim);
    const attacker = await signUp(t, 'attacker');
    const attackerFactor = await enrolTotp(attacker);
    const victimChallenge = await passwordStep(victim);
    const res = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: victimChallenge, method: 'totp', code: codeAt(attackerFactor.secret) });
    expect(res.status).toBe(401);
    const recovery = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: victimChallenge, method: 'recovery_code', code: attackerFactor.recoveryCodes[0] });
    expect(recovery.status).toBe(401);
  });

  it('takes a recovery code once', async () => {
    const user = await signUp(t, 'recovery');
    const { recoveryCodes } = await enrolTotp(user);
    const code = recoveryCodes[3]!.toUpperCase();
    expect((await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'recovery_code', code })).status).toBe(200);
    expect((await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: await passwordStep(user), method: 'recovery_code', code })).status).toBe(401);
  });

  it('needs the second factor to reauthenticate too', async () => {
    const user = await signUp(t, 'reauth');
    const { secret } = await enrolTotp(user);
    clock.advance(60 * 60_000);
    const reauth = await t.http.post('/v1/auth/reauthenticate').set(...bearer(user.token)).send({ password: PASSWORD });
    expect(reauth.status).toBe(200);
    expect(reauth.body.mfaRequired).toBe(true);
    const stale = await t.http.post('/v1/me/mfa/recovery-codes').set(...bearer(user.token));
    expect(stale.status).toBe(403);
    const verified = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: reauth.body.challenge.token, method: 'totp', code: codeAt(secret) });
    expect(verified.status).toBe(200);
    expect(verified.body.authenticatedAt).toBe(clock.now().toISOString());
    expect((await t.http.post('/v1/me/mfa/recovery-codes').set(...bearer(user.token))).status).toBe(200);
  });

  it('removes TOTP with a current code; sign-in is a password alone again', async () => {
    const user = await signUp(t, 'remove');
    const { secret } = await enrolTotp(user);
    const wrong = await t.http.delete('/v1/me/mfa/totp').set(...bearer(user.token)).send({ code: '000000' === codeAt(secret) ? '111111' : '000000' });
    expect(wrong.status).toBe(400);
    const removed = await t.http.delete('/v1/me/mfa/totp').set(...bearer(user.token)).send({ code: codeAt(secret) });
    expect(removed.status).toBe(204);
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD });
    expect(signIn.body.session.token).toMatch(/^cps_/);
    expect((await t.http.get('/v1/me/mfa').set(...bearer(user.token))).body).toEqual({ methods: [], totp: false, passkeys: 0, recoveryCodesRemaining: 0 });
  });
});

describe('passkeys', () => {
  it('registers a passkey and signs in with it; a cloned authenticator (lower counter) is refused', async () => {
    const user = await signUp(t, 'passkey');
    const { authenticator, item } = await registerPasskey(user);
    expect(item).toEqual({ id: expect.stringMatching(/^pky_/), name: 'Laptop', createdAt: expect.any(String), lastUsedAt: null });
    const list = await t.http.get('/v1/me/passkeys').set(...bearer(user.token));
    expect(list.body.items).toEqual([item]);

    const signInWith = async (extra: Parameters<SoftAuthenticator['get']>[1] = {}) => {
      const token = await passwordStep(user);
      const options = await t.http.post('/v1/auth/mfa/passkey-options').send({ challengeToken: token });
      expect(options.status).toBe(200);
      expect(options.body.allowCredentials.map((c: { id: string }) => c.id)).toEqual([authenticator.credentials[0]!.id.toString('base64url')]);
      return t.http.post('/v1/auth/mfa/verify').send({ challengeToken: token, method: 'passkey', response: authenticator.get(options.body, extra) });
    };
    const first = await signInWith();
    expect(first.status).toBe(200);
    expect(first.body.session.token).toMatch(/^cps_/);
    const clone = authenticator.clone();
    expect((await signInWith({ counter: 5 })).status).toBe(200);
    const cloned = await signInWith({ credential: clone, counter: 3 });
    expect(cloned.status).toBe(401);
    const wrongOrigin = await signInWith({ counter: 9, origin: 'https://evil.example' });
    expect(wrongOrigin.status).toBe(401);

    const removed = await t.http.delete(`/v1/me/passkeys/${item.id}`).set(...bearer(user.token));
    expect(removed.status).toBe(204);
    expect((await t.http.delete(`/v1/me/passkeys/${item.id}`).set(...bearer(user.token))).status).toBe(404);
  });

  it('refuses a registration for options it did not give, or from another origin', async () => {
    const user = await signUp(t, 'passkey-bad');
    const authenticator = new SoftAuthenticator(ORIGIN);
    const unasked = await t.http.post('/v1/me/passkeys').set(...bearer(user.token)).send({ name: 'x', response: authenticator.create({ challenge: 'bm90LWFza2Vk' }) });
    expect(unasked.status).toBe(409);
    const options = await t.http.post('/v1/me/passkeys/options').set(...bearer(user.token));
    const evil = await t.http.post('/v1/me/passkeys').set(...bearer(user.token)).send({ name: 'x', response: authenticator.create(options.body, { origin: 'https://evil.example' }) });
    expect(evil.status).toBe(400);
    expect(evil.body.details[0].path).toEqual(['body', 'response']);
  });
});

describe('the organization\'s require-MFA policy', () => {
  it('may be switched on only by someone holding a factor; then a session without one is 403 mfa_enrollment_required outside /v1/me', async () => {
    const owner = await createOrganization(t, 'Strict');
    const member = await addMember(t, owner.organizationId, 'member');
    // Read and changed only by those who may update the organization.
    for (const res of [await t.http.get('/v1/org/auth-policy').set(...bearer(member.token)), await t.http.put('/v1/org/auth-policy').set(...bearer(member.token)).send({ requireMfa: false })]) {
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 403, error: 'forbidden' });
    }
    expect((await t.http.get('/v1/org/auth-policy').set(...bearer(owner.token))).body).toEqual({ requireMfa: false, updatedAt: null });
    const refused = await t.http.put('/v1/org/auth-policy').set(...bearer(owner.token)).send({ requireMfa: true });
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toBe('mfa_enrollment_required');
    await enrolTotp(owner);
    const on = await t.http.put('/v1/org/auth-policy').set(...bearer(owner.token)).send({ requireMfa: true });
    expect(on.status).toBe(200);
    expect(on.body).toEqual({ requireMfa: true, updatedAt: clock.now().toISOString() });

    // The member's session, made before the policy, stops at once outside /v1/me.
    const blocked = await t.http.get('/v1/members').set(...bearer(member.token));
    expect(blocked.status).toBe(403);
    expect(blocked.body.reason).toBe('mfa_enrollment_required');
    expect((await t.http.get('/v1/me').set(...bearer(member.token))).status).toBe(200);
    // The owner's enrolling session counts as a second-factor session.
    expect((await t.http.get('/v1/members').set(...bearer(owner.token))).status).toBe(200);

    // Enrolling in that session satisfies it.
    await enrolTotp(member);
    expect((await t.http.get('/v1/members').set(...bearer(member.token))).status).toBe(200);
  });

  it('does not leak into another organization of the same user', async () => {
    const strict = await createOrganization(t, 'Strict B');
    await enrolTotp(strict);
    expect((await t.http.put('/v1/org/auth-policy').set(...bearer(strict.token)).send({ requireMfa: true })).status).toBe(200);
    const other = await createOrganization(t, 'Relaxed');
    const member = await addMember(t, strict.organizationId);
    // The member also belongs to the relaxed organization; switching there works, and acts there.
    await addExistingUser(other.organizationId, member.userId);
    expect((await t.http.get('/v1/members').set(...bearer(member.token))).status).toBe(403);
    const switched = await t.http.post('/v1/me/active-organization').set(...bearer(member.token)).send({ organizationId: other.organizationId });
    expect(switched.status).toBe(200);
    expect((await t.http.get('/v1/members').set(...bearer(member.token))).status).toBe(200);
  });
});
