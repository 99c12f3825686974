import pino from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/server/app';
import { loadSettings } from '../../src/settings';
import { connectServer } from '../../src/db/connect';
import type { ManualClock } from '../support/clock';
import { createTestApp, type TestApp } from '../support/app';
import { testDbKind, serverUrl } from '../support/env';
import { bearer, createOrganization, PASSWORD, signUp, uniqueEmail } from '../support/factories';

/**
 * The service's own protections: rate limits kept in Postgres (so they hold across processes),
 * CORS allow-list, security headers, and a sign-in that does not tell which e-mails exist.
 */
const XFF = 'x-forwarded-for';

describe('sign-in failures per e-mail (default 10 per 15 minutes)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers 429 with Retry-After after 10 failures, even to the right password, until the window ends', async () => {
    const user = await signUp(t, 'victim');
    for (let i = 0; i < 10; i++) {
      const res = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: `wrong ${i}` });
      expect(res.status).toBe(401);
    }
    const blocked = await t.http.post('/v1/auth/sign-in').send({ email: user.email.toUpperCase(), password: PASSWORD });
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ error: 'rate_limited', message: expect.any(String) });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(15 * 60);
    // Another e-mail is not affected.
    const other = await signUp(t, 'bystander');
    expect((await t.http.post('/v1/auth/sign-in').send({ email: other.email, password: PASSWORD })).status).toBe(200);

    (t.clock as ManualClock).advance(15 * 60_000 + 1000);
    const after = await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD });
    expect(after.status).toBe(200);
  });

  it('a success clears the e-mail counter', async () => {
    const user = await signUp(t, 'clears');
    for (let i = 0; i < 9; i++) await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: 'wrong password' });
    expect((await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD })).status).toBe(200);
    for (let i = 0; i < 9; i++) expect((await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: 'wrong password' })).status).toBe(401);
  });

  it('counts concurrent failures exactly (one atomic statement per hit)', async () => {
    const email = uniqueEmail('burst');
    const answers = await Promise.all(Array.from({ length: 25 }, () => t.http.post('/v1/auth/sign-in').send({ email, password: 'wrong password' })));
    // Every request checked the limit before any counted, or after: never more than 10 + the in-flight ones got through.
    expect(answers.every((r) => r.status === 401 || r.status === 429)).toBe(true);
    const rows = await t.db.selectFrom('rate_limits').select(['key', 'points']).where('key', 'like', 'signInEmail:%').execute();
    const total = rows.reduce((n, r) => n + r.points, 0);
    expect(total).toBeGreaterThanOrEqual(answers.filter((r) => r.status === 401).length);
    expect((await t.http.post('/v1/auth/sign-in').send({ email, password: 'wrong password' })).status).toBe(429);
  });
});

// Hashes at the service's own cost (test apps default to PASSWORD_HASH_COST=test): the decoy must
// cost what a real verification costs, which only shows when that cost is well above the noise.
describe('sign-in timing (PASSWORD_HASH_COST=standard)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { PASSWORD_HASH_COST: 'standard' } });
  });
  afterAll(() => t.close());

  it('answers the same, in similar time, for an unknown e-mail and a wrong password (argon2 runs in both paths)', async () => {
    const user = await signUp(t, 'timing');
    const time = async (email: string) => {
      const started = process.hrtime.bigint();
      const res = await t.http.post('/v1/auth/sign-in').send({ email, password: 'not the password' });
      expect(res.status).toBe(401);
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const unknown: number[] = [];
    const wrong: number[] = [];
    for (let i = 0; i < 5; i++) {
      unknown.push(await time(uniqueEmail('ghost')));
      wrong.push(await time(user.email));
    }
    const [u, w] = [median(unknown), median(wrong)];
    // Without the decoy hash an unknown e-mail answers in ~1 ms against ~tens of ms for argon2.
    expect(u / w).toBeGreaterThan(1 / 3);
    expect(u / w).toBeLessThan(3);
  });
});

describe('per-IP limits (behind one proxy: TRUST_PROXY=1)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      env: {
        // supertest's connection stands for the load balancer: one hop.
        TRUST_PROXY: '1',
        RATE_LIMIT_SIGN_IN_IP: '5/15m',
        RATE_LIMIT_SIGN_UP_IP: '3/1h',
        RATE_LIMIT_BOOTSTRAP_IP: '2/15m',
        RATE_LIMIT_INVITATION_ACCEPT_USER: '3/15m',
        RATE_LIMIT_INVITATION_ACCEPT_IP: '100/15m',
      },
      settings: { bootstrapToken: 'the-bootstrap-token' },
    });
  });
  afterAll(() => t.close());

  it('limits sign-in failures per IP across e-mails; another IP is not affected', async () => {
    for (let i = 0; i < 5; i++) expect((await t.http.post('/v1/auth/sign-in').set(XFF, '203.0.113.7').send({ email: uniqueEmail('spray'), password: 'guess' })).status).toBe(401);
    const blocked = await t.http.post('/v1/auth/sign-in').set(XFF, '203.0.113.7').send({ email: uniqueEmail('spray'), password: 'guess' });
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBeDefined();
    expect((await t.http.post('/v1/auth/sign-in').set(XFF, '203.0.113.8').send({ email: uniqueEmail('spray'), password: 'guess' })).status).toBe(401);
  });

  it('counts the address the proxy saw, not the left-most entries the client wrote itself', async () => {
    // The balancer appends the client's address; whatever the client sent comes before it.
    const spoofed = (i: number) => `10.${i}.0.1, 192.0.2.${i}, 203.0.113.60`;
    for (let i = 0; i < 5; i++) expect((await t.http.post('/v1/auth/sign-in').set(XFF, spoofed(i)).send({ email: uniqueEmail('rotate'), password: 'guess' })).status).toBe(401);
    expect((await t.http.post('/v1/auth/sign-in').set(XFF, spoofed(9)).send({ email: uniqueEmail('rotate'), password: 'guess' })).status).toBe(429);
    expect((await t.http.post('/v1/auth/sign-in').set(XFF, '203.0.113.60').send({ email: uniqueEmail('rotate'), password: 'guess' })).status).toBe(429);
  });

  it('TRUST_PROXY as the proxies\' addresses (loopback, a CIDR) counts the same address', async () => {
    const named = await createTestApp({ database: t.database, clock: t.clock, env: { TRUST_PROXY: 'loopback, 10.0.0.0/8', RATE_LIMIT_SIGN_IN_IP: '5/15m' } });
    // 10.9.9.9 is a trusted proxy too, so the client is the entry before it.
    const chain = (i: number) => `198.18.${i}.1, 203.0.113.61, 10.9.9.9`;
    for (let i = 0; i < 5; i++) expect((await named.http.post('/v1/auth/sign-in').set(XFF, chain(i)).send({ email: uniqueEmail('cidr'), password: 'guess' })).status).toBe(401);
    expect((await named.http.post('/v1/auth/sign-in').set(XFF, chain(7)).send({ email: uniqueEmail('cidr'), password: 'guess' })).status).toBe(429);
    await named.close();
  });

  it('limits sign-ups per IP', async () => {
    for (let i = 0; i < 3; i++) expect((await t.http.post('/v1/auth/sign-up').set(XFF, '198.51.100.1').send({ email: uniqueEmail('bulk'), password: PASSWORD, name: 'b' })).status).toBe(201);
    const blocked = await t.http.post('/v1/auth/sign-up').set(XFF, '198.51.100.1').send({ email: uniqueEmail('bulk'), password: PASSWORD, name: 'b' });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error).toBe('rate_limited');
  });

  it('limits bootstrap attempts per IP (token guessing)', async () => {
    const body = { email: uniqueEmail('root'), password: PASSWORD, name: 'Root', organizationName: 'Platform' };
    for (let i = 0; i < 2; i++) expect((await t.http.post('/v1/bootstrap').set(XFF, '192.0.2.9').set('x-bootstrap-token', `guess-${i}`).send(body)).status).toBe(401);
    const blocked = await t.http.post('/v1/bootstrap').set(XFF, '192.0.2.9').set('x-bootstrap-token', 'the-bootstrap-token').send(body);
    expect(blocked.status).toBe(429);
  });

  it('limits invitation accepts per user', async () => {
    const user = await signUp(t, 'acceptor');
    for (let i = 0; i < 3; i++) {
      const res = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token: `inv_guess_${i}_${'x'.repeat(20)}` });
      expect(res.status).toBe(404);
    }
    const blocked = await t.http.post('/v1/invitations/accept').set(...bearer(user.token)).send({ token: `inv_guess_${'y'.repeat(20)}` });
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBeDefined();
  });
});

(testDbKind() === 'pg' ? describe : describe.skip)('limits hold across processes (two apps, two pools, one database)', () => {
  let t: TestApp;
  let second: ReturnType<typeof connectServer>;
  beforeAll(async () => {
    t = await createTestApp();
    second = connectServer(serverUrl(t.database.name!));
  });
  afterAll(async () => {
    await second.close();
    await t.close();
  });

  it('failures on either process count against one window', async () => {
    const other = supertest(createApp({ db: second.db, clock: t.clock, logger: pino({ level: 'silent' }), fetch, settings: t.settings }));
    const user = await signUp(t, 'shared');
    for (let i = 0; i < 10; i++) {
      const via = i % 2 === 0 ? t.http : other;
      expect((await via.post('/v1/auth/sign-in').send({ email: user.email, password: 'wrong' })).status).toBe(401);
    }
    expect((await t.http.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD })).status).toBe(429);
    expect((await other.post('/v1/auth/sign-in').send({ email: user.email, password: PASSWORD })).status).toBe(429);
  });
});

describe('headers and CORS', () => {
  let closed: TestApp;
  let open: TestApp;
  beforeAll(async () => {
    closed = await createTestApp();
    open = await createTestApp({ env: { CORS_ORIGINS: 'https://console.example.test' } });
  });
  afterAll(async () => {
    await closed.close();
    await open.close();
  });

  it('sends security headers and no x-powered-by on every answer, errors included', async () => {
    for (const res of [await closed.http.get('/health'), await closed.http.get('/v1/org'), await closed.http.get('/v1/nothing')]) {
      expect(res.headers['x-powered-by']).toBeUndefined();
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBeDefined();
      expect(res.headers['strict-transport-security']).toBeDefined();
    }
  });

  it('allows no cross-origin caller by default', async () => {
    const res = await closed.http.options('/v1/org').set('origin', 'https://evil.example.test').set('access-control-request-method', 'GET');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('allows exactly the configured origins', async () => {
    const owner = await createOrganization(open);
    const ok = await open.http.get('/v1/org').set('origin', 'https://console.example.test').set(...bearer(owner.token));
    expect(ok.headers['access-control-allow-origin']).toBe('https://console.example.test');
    const preflight = await open.http.options('/v1/org').set('origin', 'https://console.example.test').set('access-control-request-method', 'GET');
    expect(preflight.status).toBeLessThan(300);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://console.example.test');
    const evil = await open.http.get('/v1/org').set('origin', 'https://evil.example.test').set(...bearer(owner.token));
    expect(evil.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('rate-limit settings', () => {
  it('reads N/window and off, and refuses anything else naming the variable', () => {
    const s = loadSettings({ RATE_LIMIT_SIGN_IN_EMAIL: '5/30s', RATE_LIMIT_SIGN_UP_IP: 'off' });
    expect(s.rateLimits.signInEmail).toEqual({ points: 5, windowMs: 30_000 });
    expect(s.rateLimits.signUpIp).toBeNull();
    expect(loadSettings({}).rateLimits).toMatchObject({ signInEmail: { points: 10, windowMs: 900_000 }, signInIp: { points: 100, windowMs: 900_000 }, signUpIp: { points: 30, windowMs: 3_600_000 } });
    for (const bad of ['10', '0/1m', 'ten/1m', '10/forever']) expect(() => loadSettings({ RATE_LIMIT_BOOTSTRAP_IP: bad })).toThrow('RATE_LIMIT_BOOTSTRAP_IP');
  });
});
