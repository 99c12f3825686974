import pino from 'pino';
import supertest from 'supertest';
import type { Kysely } from 'kysely';
import { createApp } from '../../src/server/app';
import type { DB } from '../../src/db/schema';
import { fastRouting } from '../../src/server/fast-router';
import { leanDispatch } from '../../src/server/dispatch';
import { systemClock } from '../../src/lib/clock';
import { loadSettings } from '../../src/settings';
import { TEST_SECRET_KEY } from '../support/app';

/**
 * The HTTP fast paths earn their keep only while they serve: bench scenario 1 (GET /v1/org) costs
 * ~1.6 ms of service CPU per request without the fast router (src/server/fast-router.ts) against
 * ~0.5 ms with it, and ~0.6 ms through openapi-backend's handleRequest instead of the lean
 * dispatch (src/server/dispatch.ts). Both fall back to the library without a word (an API root that
 * is not `/`, a hook the dispatcher does not run, a handler missing, a request the fast parse
 * leaves to the library), so this test builds the app as production runs it (NODE_ENV=production,
 * the settings of an empty environment, response validation off)
 * and asserts that plain requests to known routes, literal and templated, were matched by the
 * fast router and run by the lean dispatch, none by the library. The requests carry no
 * credential: they are routed, then refused (401) before any database work.
 */
const previousNodeEnv = process.env.NODE_ENV;
afterAll(() => {
  process.env.NODE_ENV = previousNodeEnv;
});

test('in production, plain requests to known routes take the fast router and the lean dispatch', async () => {
  process.env.NODE_ENV = 'production';
  const settings = { ...loadSettings({}), secretKey: TEST_SECRET_KEY };
  // No request here reaches the database: a query would throw, answer 500 and fail the test.
  const db = new Proxy(
    {},
    {
      get: () => {
        throw new Error('this test does not reach the database');
      },
    },
  ) as unknown as Kysely<DB>;
  // Validators compiled on first use (as in every test app): compiling all of them, as main.ts
  // does, takes tens of seconds on a loaded machine and has no bearing on which path serves.
  const app = createApp({ db, clock: systemClock, logger: pino({ level: 'silent' }), fetch: globalThis.fetch, settings, validateResponses: false, compileValidatorsAtStart: false });
  const http = supertest(app);
  const routed = { ...fastRouting };
  const dispatched = { ...leanDispatch };

  // GET /v1/org and /v1/members are literal paths, GET /v1/teams/{teamId} a templated one.
  const paths = ['/v1/org', '/v1/members?limit=10', '/v1/teams/team_01h2xcejqtf2nbrexx3vqjhp41'];
  for (const path of paths) {
    const res = await http.get(path);
    expect([path, res.status]).toEqual([path, 401]);
  }
  expect(fastRouting.installed - routed.installed).toBe(1);
  expect(fastRouting.library - routed.library).toBe(0);
  expect(fastRouting.matched - routed.matched).toBeGreaterThanOrEqual(paths.length);
  // Every operation has a plan, and every request above ran on one.
  expect(leanDispatch.planned - dispatched.planned).toBeGreaterThan(100);
  expect(leanDispatch.lean - dispatched.lean).toBe(paths.length);
  expect(leanDispatch.library - dispatched.library).toBe(0);

  // The counters can tell: a path no operation has is left to the library (its 404).
  expect((await http.get('/v1/no-such-route')).status).toBe(404);
  expect(fastRouting.library - routed.library).toBeGreaterThan(0);
  expect(leanDispatch.library - dispatched.library).toBe(1);
}, 120_000);
