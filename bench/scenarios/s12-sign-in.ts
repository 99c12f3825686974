import { Secret, TOTP } from 'otpauth';
import type { BenchContext } from '../lib/context';
import { SECRET_KEY } from '../lib/context';
import { measureRounds, type LoopLoad, type Measurement } from '../lib/load';
import type { Target } from '../lib/procs';
import { check, type ScenarioResult } from '../lib/report';
import { newId } from '../../src/lib/ids';
import { hashPassword, SecretBox } from '../../src/lib/crypto';
import { insertUser } from '../../src/users/store';

/**
 * One client at a time: with several, the cheap second request queues for CPU behind the other
 * clients' argon2 hashes and its latency measures the queue, not the step.
 */
const CONNECTIONS = 1;
const ROUNDS = 4;
/**
 * A TOTP code is accepted once per user and 30-second step (replay protection), so each two-step
 * sign-in takes a user whose last step is older than the current one: the pool must outlast the
 * measured window (warm-up and rounds) at the rate argon2 allows on two cores.
 */
const TOTP_USERS = 1_500;
const PLAIN_USERS = 200;
const PASSWORD = 'bench sign-in passphrase 7d1f';
const STEP_MS = 30_000;

/**
 * Scenario 12: the second factor's added cost. A plain password sign-in (`POST /v1/auth/sign-in`
 * → session) against the two-step sign-in of a user with an authenticator app (`POST
 * /v1/auth/sign-in` → challenge, then `POST /v1/auth/mfa/verify` with a TOTP code → session),
 * each timed end to end by the client, in alternating rounds on the same service process. argon2
 * dominates both; what the second step adds is a challenge row, a TOTP check with its replay
 * guard and the session. Codes are computed by otpauth (an implementation independent of the
 * service's otplib), as an authenticator app would.
 */
export async function scenarioSignIn(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '12',
    title: 'Sign-in: password only vs password + TOTP (two steps)',
    setup: [
      `${CONNECTIONS} client at a time for each; warmed ${ctx.warmup} s, measured ${ctx.duration} s in ${ROUNDS} alternating rounds; one service process (per-address and per-IP sign-in limits off for the load)`,
      `${PLAIN_USERS} users without a second factor, ${TOTP_USERS.toLocaleString('en')} with a confirmed authenticator app (one TOTP code per user and 30-s step), all with the same argon2 hash (standard cost)`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const box = new SecretBox(SECRET_KEY);
  const passwordHash = await hashPassword(PASSWORD);
  const now = new Date();
  const tag = newId('user').slice(-6);
  const plain: string[] = [];
  for (let i = 0; i < PLAIN_USERS; i++) {
    const user = await insertUser(db, { id: newId('user'), email: `plain${i}-${tag}@bench.test`, name: `Plain ${i}`, passwordHash, isPlatformAdmin: false, emailVerified: true, now });
    plain.push(user.email);
  }
  const withTotp: { email: string; totp: TOTP; lastStep: number }[] = [];
  const totpRows = [];
  for (let i = 0; i < TOTP_USERS; i++) {
    const user = await insertUser(db, { id: newId('user'), email: `totp${i}-${tag}@bench.test`, name: `Totp ${i}`, passwordHash, isPlatformAdmin: false, emailVerified: true, now });
    const secret = new Secret({ size: 20 });
    totpRows.push({ user_id: user.id, secret_sealed: box.encrypt(secret.base32), created_at: now, confirmed_at: now, last_used_step: null });
    withTotp.push({ email: user.email, totp: new TOTP({ secret, algorithm: 'SHA1', digits: 6, period: 30 }), lastStep: -1 });
  }
  for (let i = 0; i < totpRows.length; i += 500) await db.insertInto('user_totp').values(totpRows.slice(i, i + 500)).execute();
  await ctx.scratch.analyze();

  const targets: Target[] = [];
  try {
    const service = await ctx.startService('s12-service', { RATE_LIMIT_SIGN_IN_EMAIL: 'off', RATE_LIMIT_SIGN_IN_IP: 'off' });
    targets.push(service);
    const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${service.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
      return json;
    };
    let nextPlain = 0;
    let nextTotp = 0;
    let exhausted = 0;
    const secondStepMs: number[] = [];
    const plainLoad: LoopLoad = {
      label: 'password sign-in (baseline)',
      concurrency: CONNECTIONS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      work: async () => {
        const email = plain[nextPlain++ % plain.length]!;
        const res = await post('/v1/auth/sign-in', { email, password: PASSWORD });
        if (res.mfaRequired === true || !res.session) throw new Error('a plain sign-in did not open a session');
      },
    };
    const twoStepLoad: LoopLoad = {
      label: 'password + TOTP sign-in (two requests)',
      concurrency: CONNECTIONS,
      duration: ctx.duration,
      warmup: ctx.warmup,
      work: async () => {
        const step = Math.floor(Date.now() / STEP_MS);
        let user = null;
        for (let tries = 0; tries < withTotp.length && !user; tries++) {
          const candidate = withTotp[nextTotp++ % withTotp.length]!;
          if (candidate.lastStep < step) user = candidate;
        }
        if (!user) {
          exhausted++;
          throw new Error('every TOTP user has signed in during this step');
        }
        user.lastStep = step;
        const first = await post('/v1/auth/sign-in', { email: user.email, password: PASSWORD });
        const challenge = first.challenge as { token?: string } | undefined;
        if (first.mfaRequired !== true || !challenge?.token) throw new Error('the first step did not answer a challenge');
        const t0 = process.hrtime.bigint();
        const second = await post('/v1/auth/mfa/verify', { challengeToken: challenge.token, method: 'totp', code: user.totp.generate() });
        if (!second.session) throw new Error('the second step did not open a session');
        secondStepMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      },
    };
    const [baseline, twoStep] = (await measureRounds([plainLoad, twoStepLoad], ROUNDS)) as [Measurement, Measurement];
    result.rows.push(baseline, twoStep);
    const sorted = secondStepMs.sort((a, b) => a - b);
    const secondP50 = sorted[Math.floor(sorted.length / 2)] ?? NaN;
    twoStep.extra = { 'second request p50 ms': Number(secondP50.toFixed(2)) };
    result.notes.push(`two-step adds ${(twoStep.p50 - baseline.p50).toFixed(1)} ms at p50 (${baseline.p50.toFixed(1)} → ${twoStep.p50.toFixed(1)} ms)`);
    if (exhausted > 0) result.notes.push(`${exhausted} two-step attempts found no user free in the current 30-s step (grow TOTP_USERS)`);
    result.checks.push(
      check('p50 two-step / password only', twoStep.p50 / baseline.p50, '<=', 1.3),
      check('errors', baseline.errors + twoStep.errors, '<=', 0),
    );
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  return result;
}
