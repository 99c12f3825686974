import pino from 'pino';
import supertest from 'supertest';
import { createApp } from '../../src/server/app';
import { connectServer } from '../../src/db/connect';
import { loadSettings } from '../../src/settings';
import { systemClock } from '../../src/lib/clock';
import { TEST_SECRET_KEY } from '../support/app';

/** A database nobody answers for: every route that needs it says 503, quickly, and /health stays up. */
describe('database unreachable', () => {
  const database = connectServer('postgres://root@127.0.0.1:9/nothing', { connectionTimeoutMs: 500 });
  const app = createApp({
    db: database.db,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    fetch: globalThis.fetch,
    settings: { ...loadSettings({}), secretKey: TEST_SECRET_KEY },
    validateResponses: true, compileValidatorsAtStart: false,
  });
  afterAll(() => database.close());

  it('answers 503 service_unavailable on authenticated and public routes, 200 on /health', async () => {
    const started = Date.now();
    const org = await supertest(app).get('/v1/org').set('authorization', 'Bearer cps_whatever');
    expect(org.status).toBe(503);
    expect(org.body).toEqual({ error: 'service_unavailable', message: expect.any(String) });
    const signIn = await supertest(app).post('/v1/auth/sign-in').send({ email: 'a@example.test', password: 'whatever' });
    expect(signIn.status).toBe(503);
    const ready = await supertest(app).get('/ready');
    expect(ready.status).toBe(503);
    expect((await supertest(app).get('/health')).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
