import pino from 'pino';
import pg from 'pg';
import supertest from 'supertest';
import { createApp } from '../../src/server/app';
import { connectServer, type Database } from '../../src/db/connect';
import { migrateToLatest } from '../../src/db/migrate';
import { loadSettings } from '../../src/settings';
import { systemClock } from '../../src/lib/clock';
import { markEmailVerified } from '../../src/users/service';
import { TEST_SECRET_KEY, TEST_RATE_LIMITS } from '../support/app';
import { testDbKind } from '../support/env';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { createDatabaseOn, startThrowawayPostgres, throwawayUnavailableReason, type ThrowawayPostgres } from '../support/throwaway-postgres';

/**
 * Postgres stops in the middle of a write load and comes back. While it is gone every request is
 * answered 503 service_unavailable within a bound (no hang), /ready is 503 and /health 200; when it
 * is back the same app (no restart) serves again, and every write that was acknowledged is there.
 * The cluster is the test's own (initdb in a temporary folder, its own port). Runs once, with the
 * server-database pass of the suite (the embedded database has no server to stop).
 */
const reason = testDbKind() !== 'pg' ? 'runs with TEST_DB=pg only' : throwawayUnavailableReason();
if (reason) console.warn(`Postgres fault test skipped: ${reason}`);
const maybe = reason ? describe.skip : describe;

const BOUND_MS = 5_000;

maybe('Postgres stops mid-load and comes back', () => {
  let cluster: ThrowawayPostgres;
  let database: Database;
  let http: ReturnType<typeof supertest>;
  beforeAll(async () => {
    cluster = await startThrowawayPostgres();
    await createDatabaseOn(cluster, 'app');
    const setup = connectServer(cluster.url('app'));
    await migrateToLatest(setup.db);
    await setup.close();
    database = connectServer(cluster.url('app'), { connectionTimeoutMs: 1000 });
    const settings = { ...loadSettings({ LOG_LEVEL: 'silent', ...TEST_RATE_LIMITS }), secretKey: TEST_SECRET_KEY };
    http = supertest(createApp({ db: database.db, clock: systemClock, logger: pino({ level: 'silent' }), fetch, settings, validateResponses: true, compileValidatorsAtStart: false }));
  }, 120_000);
  afterAll(async () => {
    await database?.close();
    cluster?.destroy();
  });

  it('answers 503 quickly while it is down, recovers without a restart, and loses no acknowledged write', async () => {
    const signUp = await http.post('/v1/auth/sign-up').send({ email: uniqueEmail('fault'), password: PASSWORD, name: 'Fault' });
    expect(signUp.status).toBe(201);
    await markEmailVerified(database.db, signUp.body.user.id, new Date());
    const auth = `Bearer ${signUp.body.session.token}`;
    expect((await http.post('/v1/org').set('authorization', auth).send({ name: 'Faulty' })).status).toBe(201);

    const acknowledged: string[] = [];
    const unexpected: string[] = [];
    let slowest = 0;
    let n = 0;
    let running = true;
    const writer = async () => {
      while (running) {
        const started = Date.now();
        const res = await http.post('/v1/teams').set('authorization', auth).send({ name: `team ${n++}` });
        slowest = Math.max(slowest, Date.now() - started);
        if (res.status === 201) acknowledged.push(res.body.item.id);
        else if (!(res.status === 503 && res.body.error === 'service_unavailable')) unexpected.push(`${res.status} ${JSON.stringify(res.body)}`);
        if (res.status === 503) await new Promise((r) => setTimeout(r, 50));
      }
    };
    const writers = [writer(), writer(), writer(), writer()];
    await new Promise((r) => setTimeout(r, 1500));
    const beforeStop = acknowledged.length;

    cluster.stop('fast');
    await new Promise((r) => setTimeout(r, 500));
    const downStarted = Date.now();
    const [ready, health, org] = await Promise.all([http.get('/ready'), http.get('/health'), http.get('/v1/org').set('authorization', auth)]);
    expect(Date.now() - downStarted).toBeLessThan(BOUND_MS);
    expect(ready.status).toBe(503);
    expect(health.status).toBe(200);
    expect(org.status).toBe(503);
    expect(org.body).toEqual({ error: 'service_unavailable', message: expect.any(String) });
    expect(org.headers['retry-after']).toBeDefined();
    await new Promise((r) => setTimeout(r, 1500));
    const duringDown = acknowledged.length;

    cluster.start();
    // Same app, same pool: it serves again once Postgres answers.
    const deadline = Date.now() + 20_000;
    while ((await http.get('/ready')).status !== 200) {
      if (Date.now() > deadline) throw new Error('the app did not recover within 20 s of Postgres starting');
      await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, 1500));
    running = false;
    await Promise.all(writers);

    expect(unexpected).toEqual([]);
    expect(slowest).toBeLessThan(BOUND_MS);
    expect(beforeStop).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(duringDown);

    const check = new pg.Client({ connectionString: cluster.url('app') });
    await check.connect();
    try {
      const { rows } = await check.query<{ id: string }>('SELECT id FROM teams WHERE id = ANY($1)', [acknowledged]);
      expect(rows.length).toBe(acknowledged.length);
    } finally {
      await check.end();
    }
  }, 90_000);
});
