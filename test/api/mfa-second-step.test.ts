import { Secret, TOTP } from 'otpauth';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, PASSWORD, signUp, type SignedUpUser } from '../support/factories';
import type { ManualClock } from '../support/clock';
import { sha256Hex } from '../../src/lib/crypto';

/**
 * The guarantees of the second step (POST /v1/auth/mfa/verify) that need their own limits or
 * concurrent requests: wrong answers count against the sign-in limits of the e-mail and of the IP,
 * a refused (429) answer spends and counts nothing, a success forgets the e-mail's failures, and
 * of concurrent right answers exactly one opens a session. Codes come from `otpauth`, independent
 * of the service's otplib. Each test signs in from its own address (TRUST_PROXY=1).
 */
let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_SIGN_IN_EMAIL: '3/1m', RATE_LIMIT_SIGN_IN_IP: '4/1m', TRUST_PROXY: '1' } });
  clock = t.clock as ManualClock;
});
afterAll(async () => {
  await t.close();
});

function codeAt(secret: string, at = clock.now()): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: at.getTime() });
}

function wrongCode(secret: string): string {
  return String((Number(codeAt(secret)) + 1) % 1_000_000).padStart(6, '0');
}

async function enrolTotp(user: { token: string }): Promise<string> {
  const start = await t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
  expect(start.status).toBe(200);
  const secret: string = start.body.secret;
  expect((await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(user.token)).send({ code: codeAt(secret) })).status).toBe(200);
  clock.advance(30_000);
  return secret;
}

async function passwordStep(user: SignedUpUser, ip: string): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').set('x-forwarded-for', ip).send({ email: user.email, password: PASSWORD });
  expect(res.status).toBe(200);
  expect(res.body.mfaRequired).toBe(true);
  return res.body.challenge.token;
}

function answer(ip: string, challengeToken: string, code: string) {
  return t.http.post('/v1/auth/mfa/verify').set('x-forwarded-for', ip).send({ challengeToken, method: 'totp', code });
}

async function emailWindow(email: string): Promise<number | null> {
  const row = await t.db
    .selectFrom('rate_limits')
    .select('points')
    .where('key', '=', `signInEmail:${sha256Hex(email.trim().toLowerCase()).slice(0, 40)}`)
    .where('expires_at', '>', clock.now())
    .executeTakeFirst();
  return row?.points ?? null;
}

describe('the second step and the sign-in limits', () => {
  it('counts wrong answers against the e-mail; once it is limited a right answer is 429 and spends and counts nothing', async () => {
    const ip = '203.0.113.1';
    const user = await signUp(t, 'email-limit');
    const secret = await enrolTotp(user);
    const token = await passwordStep(user, ip);
    for (let i = 0; i < 3; i++) expect((await answer(ip, token, wrongCode(secret))).status).toBe(401);
    const limited = await answer(ip, token, codeAt(secret));
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    clock.advance(61_000);
    // The challenge holds three failures, not four: one more wrong answer leaves it alive.
    expect((await answer(ip, token, wrongCode(secret))).status).toBe(401);
    const signedIn = await answer(ip, token, codeAt(secret));
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.session.token).toMatch(/^cps_/);
  });

  it('counts wrong answers against the IP across users', async () => {
    const ip = '203.0.113.2';
    const first = await signUp(t, 'ip-limit-a');
    const second = await signUp(t, 'ip-limit-b');
    const firstSecret = await enrolTotp(first);
    const secondSecret = await enrolTotp(second);
    const firstToken = await passwordStep(first, ip);
    const secondToken = await passwordStep(second, ip);
    for (let i = 0; i < 2; i++) expect((await answer(ip, firstToken, wrongCode(firstSecret))).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await answer(ip, secondToken, wrongCode(secondSecret))).status).toBe(401);
    // Two failures of its e-mail (under 3), four of the IP (its limit).
    expect((await answer(ip, secondToken, codeAt(secondSecret))).status).toBe(429);
    // The same challenge answered from another address is not held back by the first one's failures.
    expect((await answer('203.0.113.3', secondToken, codeAt(secondSecret))).status).toBe(200);
  });

  it('forgets the e-mail\'s failures when the factor is proven', async () => {
    const ip = '203.0.113.4';
    const user = await signUp(t, 'clears');
    const secret = await enrolTotp(user);
    const token = await passwordStep(user, ip);
    for (let i = 0; i < 2; i++) expect((await answer(ip, token, wrongCode(secret))).status).toBe(401);
    expect(await emailWindow(user.email)).toBe(2);
    expect((await answer(ip, token, codeAt(secret))).status).toBe(200);
    expect(await emailWindow(user.email)).toBeNull();
  });
});

describe('concurrent answers', () => {
  it('opens one session for a right code sent twice at once on one challenge', async () => {
    const ip = '203.0.113.5';
    const user = await signUp(t, 'race-one');
    const secret = await enrolTotp(user);
    const token = await passwordStep(user, ip);
    const code = codeAt(secret);
    const answers = await Promise.all([answer(ip, token, code), answer(ip, token, code)]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect([400, 401]).toContain(statuses[1]);
    expect((await answer(ip, token, code)).status).toBe(400);
  });

  it('opens one session for one code sent at once on two challenges (replay by step)', async () => {
    const ip = '203.0.113.6';
    const user = await signUp(t, 'race-two');
    const secret = await enrolTotp(user);
    const tokens = [await passwordStep(user, ip), await passwordStep(user, ip)];
    const code = codeAt(secret);
    const answers = await Promise.all(tokens.map((token) => answer(ip, token, code)));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
    // The refused challenge is still live (a wrong answer, not a use): the next step's code opens it.
    const refused = tokens[answers.findIndex((r) => r.status === 401)]!;
    clock.advance(30_000);
    expect((await answer(ip, refused, codeAt(secret))).status).toBe(200);
  });
});
