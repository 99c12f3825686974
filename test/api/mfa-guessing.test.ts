import { Secret, TOTP } from 'otpauth';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, PASSWORD, signUp, type SignedUpUser } from '../support/factories';
import { deliverToFolder } from '../support/mailbox';
import type { ManualClock } from '../support/clock';

/**
 * Second-factor guessing (docs/second-factors.md): whoever knows the password may not guess codes
 * without end. Wrong second-factor answers are counted per account across challenges, apart from
 * the password's failures (a right password clears those, never these): past the limit (the
 * default, 10 per 15 minutes) every answer is 429 with Retry-After until the window ends, and the
 * account's owner is mailed once. Codes come from `otpauth`, independent of the service's otplib.
 */
let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestApp();
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

async function enrolTotp(user: { token: string }): Promise<{ secret: string; recoveryCodes: string[] }> {
  const start = await t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
  expect(start.status).toBe(200);
  const secret: string = start.body.secret;
  const confirm = await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(user.token)).send({ code: codeAt(secret) });
  expect(confirm.status).toBe(200);
  clock.advance(30_000);
  return { secret, recoveryCodes: confirm.body.recoveryCodes };
}

/** The password step, right every time: a fresh challenge. */
async function passwordStep(user: SignedUpUser): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD });
  expect(res.status).toBe(200);
  expect(res.body.mfaRequired).toBe(true);
  return res.body.challenge.token;
}

function answer(challengeToken: string, method: 'totp' | 'recovery_code', code: string) {
  return t.http.post('/v1/auth/mfa/verify').send({ challengeToken, method, code });
}

const NOTICE_SUBJECT = /second-factor codes/i;

describe('second-factor guessing across challenges', () => {
  it('answers 429 with Retry-After after ten wrong codes, however many fresh challenges the password opens, and mails the owner once', async () => {
    const user = await signUp(t, 'guessed');
    const { secret } = await enrolTotp(user);
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    // 25 wrong codes, four to a challenge (a fifth would end it), each challenge after a right password.
    while (statuses.length < 25) {
      const token = await passwordStep(user);
      for (let i = 0; i < 4 && statuses.length < 25; i++) {
        const res = await answer(token, i % 2 === 0 ? 'totp' : 'recovery_code', i % 2 === 0 ? wrongCode(secret) : 'AAAAA-BBBBB');
        statuses.push(res.status);
        if (res.status === 429) retryAfter ??= res.headers['retry-after'];
      }
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual(Array(15).fill(429));
    expect(Number(retryAfter)).toBeGreaterThan(0);
    expect(Number(retryAfter)).toBeLessThanOrEqual(15 * 60);

    // While limited even the right code waits (and spends nothing)...
    const held = await passwordStep(user);
    expect((await answer(held, 'totp', codeAt(secret))).status).toBe(429);
    // ...and the owner was told once, not once per refused answer.
    const notices = (await deliverToFolder(t)).filter((m) => m.to === user.email && NOTICE_SUBJECT.test(m.subject));
    expect(notices).toHaveLength(1);
    expect(notices[0]!.text).toMatch(/10 wrong second-factor codes/);
    expect(notices[0]!.text).toMatch(/change your password/i);

    // Once the window is over, the right code signs in (a new challenge: the held one lived five minutes).
    clock.advance(15 * 60_000 + 1_000);
    const signedIn = await answer(await passwordStep(user), 'totp', codeAt(secret));
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.session.token).toMatch(/^cps_/);
  });

  it('counts per account: another account from the same address keeps its own count', async () => {
    const guessed = await signUp(t, 'guessed-a');
    const other = await signUp(t, 'guessed-b');
    const a = await enrolTotp(guessed);
    const b = await enrolTotp(other);
    for (let round = 0; round < 3; round++) {
      const token = await passwordStep(guessed);
      for (let i = 0; i < 4; i++) await answer(token, 'totp', wrongCode(a.secret));
    }
    expect((await answer(await passwordStep(guessed), 'totp', codeAt(a.secret))).status).toBe(429);
    expect((await answer(await passwordStep(other), 'totp', codeAt(b.secret))).status).toBe(200);
  });
});
