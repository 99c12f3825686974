import { Writable } from 'node:stream';
import pino from 'pino';
import { createServer } from 'node:http';
import supertest from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { createApp } from '../../src/server/app';
import type { Outbound } from '../../src/outbound';
import { loadSettings, type Settings } from '../../src/settings';
import type { Clock } from '../../src/lib/clock';
import { ManualClock } from './clock';
import type { Express } from 'express';
import { createTestDatabase, type TestDatabase } from './database';

export const TEST_SECRET_KEY = 'test-secret-key-0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Every supertest request comes from the same address, so per-IP limits meant for the internet
 * would trip ordinary test files; they are raised here (the per-e-mail and per-user limits keep
 * their defaults). test/hardening/rate-limits.test.ts checks the real defaults and the IP limits.
 */
export const TEST_RATE_LIMITS: Record<string, string> = {
  RATE_LIMIT_SIGN_IN_IP: '100000/15m',
  RATE_LIMIT_SIGN_UP_IP: '100000/1h',
  RATE_LIMIT_INVITATION_ACCEPT_IP: '100000/15m',
  RATE_LIMIT_BOOTSTRAP_IP: '100000/15m',
  RATE_LIMIT_SSO_START_IP: '100000/15m',
  RATE_LIMIT_SSO_IP: '100000/15m',
  RATE_LIMIT_CLIENT_REGISTRATION_IP: '100000/1h',
};

/**
 * The egress policy (src/outbound) refuses loopback by default, as in production; a test whose
 * worker runtimes or OAuth servers are local fakes on 127.0.0.1 allows loopback explicitly.
 */
/** Tests never query real DNS: SSO domain verification asks a closed local port (refused at once) unless a test starts its own server. */
export const NO_DNS = '127.0.0.1:9';

export const LOCAL_FAKES: Record<string, string> = { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128' };

/*
 * Test apps hash passwords at PASSWORD_HASH_COST=test (1 MiB, 1 pass instead of 19 MiB, 2): test
 * files create hundreds of users. The sign-in timing test sets `standard` back.
 */

export interface TestAppOptions {
  clock?: Clock;
  fetch?: typeof fetch;
  settings?: Partial<Settings>;
  env?: Record<string, string>;
  /** The client for tenant URLs (tests resolving names of their own); built from settings otherwise. */
  outbound?: Outbound;
  /** Another app's database: a second "process" on the same data (closed by its owner, not here). */
  database?: TestDatabase;
}

export interface TestApp {
  app: Express;
  http: TestAgent;
  database: TestDatabase;
  db: TestDatabase['db'];
  clock: Clock;
  settings: Settings;
  /** Every log line the app wrote, for checks that no secret is ever logged. */
  logs: string[];
  close(): Promise<void>;
}

/**
 * createApp on a fresh real database, with every response checked against the spec
 * (`validateResponses`): a test that gets an undeclared status or shape sees a 500.
 */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const clock = options.clock ?? new ManualClock(new Date());
  const settings: Settings = { ...loadSettings({ LOG_LEVEL: 'info', PASSWORD_HASH_COST: 'test', DNS_SERVERS: NO_DNS, ...TEST_RATE_LIMITS, ...options.env }), secretKey: TEST_SECRET_KEY, ...options.settings };
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const app = createApp({ db: database.db, clock, logger, fetch: options.fetch ?? globalThis.fetch, outbound: options.outbound, settings, validateResponses: true, compileValidatorsAtStart: false });
  // One listening server for the file's requests: supertest given a bare app starts and stops a
  // server around every request (listen, accept, close), which a suite of thousands pays for.
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    app,
    http: supertest(server),
    database,
    db: database.db,
    clock,
    settings,
    logs,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!options.database) await database.close();
    },
  };
}
