/**
 * One config for both databases: TEST_DB=pg (server Postgres, a database per test file cloned from
 * a migrated template) or TEST_DB=pglite (embedded, a migrated data dir loaded per test file).
 * `npm test` runs both; see scripts/test-all.ts (and PG_ONLY below for what runs once).
 */
/**
 * Files that run on server Postgres only (`TEST_DB=pg`); `TEST_DB=pglite` leaves them out, unless
 * TEST_ALL_FILES=1. Running them a second time on PGlite would test nothing the first run did not:
 * - they use no database at all;
 * - the generated HTTP-layer suites (bad input refused before a change, dead credentials and
 *   roles, outbound URL checks, valid random requests answered in the contract's shapes): the
 *   contract layer is the same code on both databases, and the SQL these requests reach is run on
 *   PGlite by each area's own test file (test/api/*) and by the audit log's own files (test/audit/*);
 *   the generated tenant-isolation and audit walks are such suites too;
 * - what they test is outside the database: the browser pages, metrics and readiness, the
 *   outbound client and upstream fakes, secrets at rest, security headers, the validation messages;
 * - a data migration checked row by row on server Postgres (the migrations themselves run on both:
 *   test/api/migrations.test.ts);
 * - they test several processes, concurrent transactions or a server going away, which PGlite
 *   (in-process, one statement at a time) cannot have (on PGlite they skip every test).
 * Everything else (every other test/api file, test/audit, concurrency, protection, migrations,
 * named statements...) runs on both.
 */
const PG_ONLY = [
  // no database
  'src/settings.test.ts',
  'src/lib/ids.test.ts',
  'test/mfa/authenticator.test.ts',
  'src/http/logging.test.ts',
  'test/api/permissions-catalogue.test.ts',
  'test/contract/error-codes.test.ts',
  'test/contract/examples.test.ts',
  'test/contract/public-text.test.ts',
  'test/api/unavailable.test.ts',
  'test/outbound/client.test.ts',
  'test/outbound/policy.test.ts',
  'test/seams/app-server.test.ts',
  'test/seams/fast-paths-in-production.test.ts',
  'test/seams/lazy-libraries.test.ts',
  'test/seams/start-command.test.ts',
  'test/sso/oidc-client.test.ts',
  'test/sso/saml.test.ts',
  // outside the database
  'test/browser/pages-chromium.test.ts',
  'test/browser/passkey-chromium.test.ts',
  'test/observability/metrics.test.ts',
  'test/observability/ready.test.ts',
  'test/api/outbound.test.ts',
  'test/hardening/upstreams.test.ts',
  'test/hardening/oauth-secrets.test.ts',
  'test/contract/validation-messages.test.ts',
  'test/seams/security-headers.test.ts',
  'test/seams/no-async-hooks.test.ts',
  // a data migration checked row by row
  'test/api/migration-directory-users.test.ts',
  // generated HTTP-layer suites
  'test/hardening/audit.test.ts',
  'test/hardening/isolation.test.ts',
  'test/hardening/auth.test.ts',
  'test/hardening/bad-input.test.ts',
  'test/hardening/outbound-targets.test.ts',
  'test/hardening/valid-requests.test.ts',
  // several processes, concurrent transactions, or the server going away (skipped on PGlite)
  'test/hardening/faults-db.test.ts',
  'test/hardening/process.test.ts',
  'test/hardening/webhook-processes.test.ts',
  'test/observability/tracing.test.ts',
  'test/deploy/compose-wiring.test.ts',
  'test/observability/shutdown.test.ts',
  'test/api/telemetry-concurrent-tags.test.ts',
  'test/client/client.test.ts',
];
const skipOnPglite = process.env.TEST_DB === 'pglite' && process.env.TEST_ALL_FILES !== '1';

/**
 * The library-parity seams: the service's own replacement of a library step against the library's
 * step, over every operation of the spec (seconds per operation, the slowest files of the suite).
 * They use no database and change only when the replaced code, the library or the spec does, so
 * `npm test` leaves them out and `npm run test:seams` (TEST_SEAMS=1, server Postgres only) runs
 * them alone; CI runs both (.ci/run).
 */
const SEAMS = ['test/seams/dispatch-parity.test.ts', 'test/seams/router-parity.test.ts', 'test/seams/validator-parity.test.ts'];
const seamsOnly = process.env.TEST_SEAMS === '1';
const pattern = (file) => `<rootDir>/${file.replace(/\./g, '\\.')}$`;

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.(ts|js|mjs)$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  // openid-client, oidc-provider and their jose/oauth4webapi are ESM-only (and otplib's @scure/base, @noble/hashes): jest (CommonJS) must
  // transform them with the same swc transform (checked with a full login flow under jest 30).
  transformIgnorePatterns: ['/node_modules/(?!(openid-client|oauth4webapi|jose|oidc-provider|otplib|@otplib|@scure/base|@noble/hashes)/)'],
  // The client package is tested from its source (what `npm run build` compiles to dist/).
  moduleNameMapper: { '^@org-control-plane/client$': '<rootDir>/packages/client/src/index.ts' },
  testMatch: seamsOnly ? SEAMS.map((file) => `<rootDir>/${file}`) : ['<rootDir>/test/**/*.test.ts', '<rootDir>/src/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...(seamsOnly ? [] : SEAMS.map(pattern)), ...(skipOnPglite ? PG_ONLY.map(pattern) : [])],
  // The seams use no database: no template to migrate for them.
  ...(seamsOnly ? {} : { globalSetup: '<rootDir>/test/support/global-setup.ts', globalTeardown: '<rootDir>/test/support/global-teardown.ts' }),
  maxWorkers: 2,
  // Hooks share this bound: building a test app compiles every request validator, which takes
  // seconds on a loaded 2-core machine; a test that hangs still fails, later.
  testTimeout: 120_000,
};
